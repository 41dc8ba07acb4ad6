package check

import (
	"fmt"
	"net/http"
	"time"

	"plug.directory/prober/data"
)

// Record is what the guard saw during one check.
type Record struct {
	ConnInfos []ConnInfo // the connections requests went out on, in order of first use (Exchange.Conn)
	Exchanges []Exchange // in the order requests were made, refused ones included
	Conns     int        // TCP connections established (Wire.Conns)
	Requests  int        // HTTP requests written on the wire (Wire.Requests; refused ones not counted)
	BytesRead int64      // answer bytes read after decompression, all exchanges
	Refusal   int        // first 401/403/429 status seen (then the guard sends nothing more), 0 if none
	Wire      WireCounts // what the connections saw, below net/http
	// What the check saw on its way: the first certificate a
	// server presented, nil if none; where the time went, nil if the
	// check never dialled.
	TLS     *data.TLSInfo
	Timings *data.Timings
}

// Exchange is one request of a check: sent and answered, sent and failed, or
// refused by the guard before anything was sent.
type Exchange struct {
	Start     time.Time
	Duration  time.Duration // until the answer's body was closed or failed
	Method    string        // GET or POST (or the refused method)
	URL       string        // user-info password redacted
	Hop       int           // 0 for a request the check made, n for its n-th redirect
	RPCMethod string        // JSON-RPC method of a POST body ("" for GET); "response" for a JSON-RPC response; "batch" for an array
	RPCID     string        // id of a JSON-RPC request as sent, "" for a notification
	Status    int           // HTTP status, 0 if no response
	Header    http.Header   // answer headers (WWW-Authenticate, Retry-After, Content-Type, Location, Mcp-Session-Id...)
	BodyHead  []byte        // first 4 KiB of the answer body as read (after decompression)
	Bytes     int64         // bytes read of this answer after decompression
	Nesting   int           // deepest nesting of JSON objects and arrays in the body read (jsonNesting)
	Blocked   string        // non-empty: the guard refused to send it and why ("N2: method DELETE", "N3: notifications/cancelled", "after refusal")
	Err       string        // error text, for the transcript only
	ErrKind   ErrKind       // classified by the guard at the point of failure
	Detail    string        // short human detail of ErrKind, e.g. "certificate has expired"
	Conn      int           // the connection it went out on, from 1 (Record.ConnInfos[Conn-1]); 0 if none
	FirstByte time.Duration // from the request written to its answer's first byte; 0 if no answer came
	wrote     time.Time     // when the request was written (httptrace WroteRequest)
}

// proberFault reports whether an exchange failed on the prober's own side
// (ErrLocal): then the check says nothing of the server.
func (rec Record) proberFault() bool {
	for _, ex := range rec.Exchanges {
		if ex.ErrKind == ErrLocal {
			return true
		}
	}
	return false
}

// ErrKind classifies what went wrong in an exchange, decided by the guard
// where it happened, so nobody classifies from error strings.
type ErrKind int

// The kinds of failure the guard records.
const (
	ErrNone                 ErrKind = iota
	ErrDNSNotFound                  // the name does not exist
	ErrDNS                          // the name could not be resolved for another reason
	ErrNoPublicAddr                 // resolves to no public IPv4 address (rule N6)
	ErrRefused                      // connection refused
	ErrTimeout                      // dial, handshake or answer timed out (context deadline or the guard's N10 Timeout)
	ErrTLSCert                      // certificate not accepted; Detail says why
	ErrTLSOther                     // other TLS failure (handshake, protocol version, alert)
	ErrTooLarge                     // answer over 1 MB, its headers over 64 KB, or its bytes on the wire over the allowance (rule N9); Detail says which
	ErrTooManyRedirects             // a 4th redirect (rule N8)
	ErrRedirectNotAllowed           // redirect to http://, another port, credentials or a non-public IP literal (not_checkable)
	ErrBlocked                      // the guard refused a request (rules N2, N3, after a refusal)
	ErrTargetNotAllowed             // a request (not a redirect) to a URL failing N5-N7, e.g. an SSE endpoint on port 8080
	ErrCanceled                     // the check ended it: context canceled or Guard closed
	ErrNetwork                      // other connection failure (reset, closed by the server)
	ErrRedirectMethodChange         // a 301/302/303 that would turn POST into GET (rule N8; failing, not not_checkable)
	ErrLocal                        // the prober's own failure (its source address cannot be used): never the server's
	ErrRequestCap                   // the check needed more than maxRequestsPerCheck requests
)

var errKindNames = [...]string{
	ErrNone: "", ErrDNSNotFound: "dns_not_found", ErrDNS: "dns", ErrNoPublicAddr: "no_public_addr",
	ErrRefused: "conn_refused", ErrTimeout: "timeout", ErrTLSCert: "tls_cert", ErrTLSOther: "tls",
	ErrTooLarge: "too_large", ErrTooManyRedirects: "too_many_redirects",
	ErrRedirectNotAllowed: "redirect_not_allowed", ErrBlocked: "blocked",
	ErrTargetNotAllowed: "target_not_allowed", ErrCanceled: "canceled", ErrNetwork: "network",
	ErrRedirectMethodChange: "redirect_method_change", ErrLocal: "local", ErrRequestCap: "request_cap",
}

// String returns the kind's snake_case name ("" for ErrNone).
func (k ErrKind) String() string {
	if k >= 0 && int(k) < len(errKindNames) {
		return errKindNames[k]
	}
	return fmt.Sprintf("ErrKind(%d)", int(k))
}

// MarshalText encodes the kind as its name, for JSON transcripts.
func (k ErrKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// GuardError is the error the guard returns when it refuses a request or
// stops an answer. Callers classify from Record, not from this error; it
// exists so the transcript and errors.As can name the rule.
type GuardError struct {
	Kind   ErrKind
	Rule   string // "N2", "N3", ... or "" for a refusal that follows a 401/403/429
	Detail string // short human detail
	Err    error  // underlying error, if any
}

// Error names the rule and the detail.
func (e *GuardError) Error() string {
	s := e.Detail
	if e.Rule != "" {
		s = e.Rule + ": " + s
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return "guard: " + s
}

// Unwrap returns the underlying error.
func (e *GuardError) Unwrap() error { return e.Err }
