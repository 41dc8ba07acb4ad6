package data

import (
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/idna"
)

// Server is one row of the ranked list.
type Server struct {
	ID    string
	Rank  int       // 1 = highest
	URL   string    // https:// address; "" for a server that only runs locally, or whose listed address cannot be checked
	Added time.Time // when it was listed

	// BadAddress is why the address listed cannot be checked at all
	// (DetailAddressUnparsable, DetailAddressTooLong; URL is then ""), ""
	// for an address that parses or none. Such a server is listed, shown
	// not_checkable, and never planned.
	BadAddress string
}

// NotCheckable returns why no check of s can tell more than not_checkable
// (table O): its BadAddress, DetailNoAddress when it is listed without an
// address, "" when it has one to check.
func (s Server) NotCheckable() string {
	switch {
	case s.BadAddress != "":
		return s.BadAddress
	case s.URL == "":
		return DetailNoAddress
	}
	return ""
}

// Host returns the lowercased hostname of the server's address, port
// ignored, or "" when it has none or it does not parse. Servers on one host
// share its checks (rule S3).
func (s Server) Host() string { return HostOf(s.URL) }

// HostOf returns the host of rawURL as LookupName gives it, or "" when it
// does not parse or names no host.
func HostOf(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return LookupName(u.Hostname())
}

// LookupName returns hostname as it is looked up in DNS, the host of rule
// S3: mapped through IDNA as net/http's transport maps a name before it
// dials (idna.Lookup, so "ｅｘａｍｐｌｅ.com" is "example.com" and
// "bücher.example" is "xn--bcher-kva.example"), lowercased, without a
// trailing dot. A name IDNA refuses is kept as it is, lowercased, as the
// transport dials it then.
func LookupName(hostname string) string {
	if !isASCII(hostname) {
		if a, err := idna.Lookup.ToASCII(hostname); err == nil {
			hostname = a
		}
	}
	return strings.ToLower(strings.TrimSuffix(hostname, "."))
}

// isASCII reports whether s is all ASCII: such a name needs no IDNA mapping
// (net/http skips it too).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Tier returns the usual pace of a server of this rank (rule S1).
func Tier(rank int) time.Duration {
	if rank >= 1 && rank <= HourlyTierMaxRank {
		return HourlyCadence
	}
	return DailyCadence
}

// Why a check was planned.
const (
	ReasonNew     = "new"
	ReasonRetry   = "retry"
	ReasonRoutine = "routine"
)

// Transports a check can learn.
const (
	TransportStreamable = "streamable-http"
	TransportSSE        = "sse"
)

// PlannedCheck is one line of a plan file: one check to start at one second.
type PlannedCheck struct {
	At        time.Time `json:"at"`     // planned start, whole second, UTC
	ID        string    `json:"id"`     // server id
	URL       string    `json:"url"`    // address to check
	Host      string    `json:"host"`   // lowercased hostname
	Reason    string    `json:"reason"` // ReasonNew, ReasonRetry or ReasonRoutine
	Due       time.Time `json:"due"`    // when it was due; before At when deferred
	Rank      int       `json:"rank"`
	Protocol  string    `json:"protocol,omitempty"`  // protocol version learned, "" if unknown
	Transport string    `json:"transport,omitempty"` // transport learned, "" if unknown
	Every     int64     `json:"every,omitempty"`     // effective cadence in seconds when the host's caps stretch the tier's (rule S4 fair sharing); 0: the tier's
	// Also names the other servers listed at the same address (AddressKey),
	// in rank order: the one check is theirs too.
	Also []Listing `json:"also,omitempty"`
}

// Listing is one server of the ranked list by its id and its address as
// listed.
type Listing struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// Results returns r, the result of check c, as the result of every server
// listed at its address: r for c.ID, then a copy for each of c.Also with its
// own id and address, so that its history and state go on by its id.
func (c PlannedCheck) Results(r Result) []Result {
	out := make([]Result, 0, 1+len(c.Also))
	out = append(out, r)
	for _, o := range c.Also {
		r.ID, r.URL = o.ID, o.URL
		out = append(out, r)
	}
	return out
}

// Result is everything one check found. A server that fails is data, not a Go
// error: a check always returns a full Result.
type Result struct {
	ID     string  `json:"id"`
	URL    string  `json:"url"`
	Host   string  `json:"host"`
	Reason string  `json:"reason"` // why it was planned: ReasonNew, ReasonRetry, ReasonRoutine, or "manual"
	Status Outcome `json:"status"`
	Detail string  `json:"detail"` // short human reason: "HTTP 502", "TLS: certificate has expired"

	HTTPStatus    int    `json:"http_status,omitempty"` // last HTTP status seen, 0 if none
	Protocol      string `json:"protocol,omitempty"`    // protocol version learned, e.g. "2025-11-25"
	Transport     string `json:"transport,omitempty"`   // TransportStreamable or TransportSSE
	ServerName    string `json:"server_name,omitempty"`
	ServerVersion string `json:"server_version,omitempty"`
	// What the server says of itself for people (its serverInfo's title,
	// description and websiteUrl), each "" when it does not say; the
	// website only as a WebLink.
	ServerTitle       string `json:"server_title,omitempty"`
	ServerDescription string `json:"server_description,omitempty"`
	ServerWebsite     string `json:"server_website,omitempty"`
	// KeyInfo is where a server that needs a key says to learn how to get
	// one: the resource_metadata its challenge announced (OAuth protected
	// resource metadata, which names its authorization servers), as a
	// WebLink; "" when it names none. Shown, never fetched.
	KeyInfo   string   `json:"key_info,omitempty"`
	ToolCount int      `json:"tool_count"`
	Tools     []string `json:"tools,omitempty"`      // tool names in the server's order
	ToolsHash string   `json:"tools_hash,omitempty"` // SHA-256 of the canonical tool definitions (FingerprintTools); "" when none listed
	ToolDefs  []byte   `json:"-"`                    // those definitions, canonical JSON: the journal stores them once (PutToolDefs), not in its lines
	// ToolProblems is the tool lint of the listed definitions:
	// advice, never a verdict; at most MaxToolProblems, nil when
	// none or none listed.
	ToolProblems []ToolProblem `json:"tool_problems,omitempty"`

	Planned    time.Time     `json:"planned"`    // planned start (zero for a manual check)
	Started    time.Time     `json:"started"`    // actual start
	Finished   time.Time     `json:"finished"`   // end of the check
	Lateness   time.Duration `json:"lateness"`   // Started - Planned, nanoseconds; 0 for a manual check
	Duration   time.Duration `json:"duration"`   // Finished - Started, nanoseconds
	Requests   int           `json:"requests"`   // HTTP requests sent
	Conns      int           `json:"conns"`      // TCP connections opened
	BytesRead  int64         `json:"bytes_read"` // answer bytes read, after decompression
	RetryAfter time.Time     `json:"retry_after,omitempty"`

	ProberVersion string `json:"prober_version"`

	// What the check saw on its way: the server's
	// TLS session and certificate, nil when no handshake got as far as a
	// certificate; and where its time went, nil when it opened no
	// connection.
	TLS     *TLSInfo `json:"tls,omitempty"`
	Timings *Timings `json:"timings,omitempty"`
	// Support is how the server spoke: the versions
	// server/discover listed, whether it kept a session, whether answers
	// came as JSON or event streams; nil when the check learned none of it.
	Support *ProtocolSupport `json:"protocol_support,omitempty"`

	// ProberFault says the check failed on the prober's side (its source
	// address or its sockets), so it says nothing of the server: a runner
	// never records it against the server (never journaled, not in the
	// history); the planner plans the check again.
	ProberFault bool `json:"-"`
}

// State is what the planner needs to know of one server, folded from its
// results (see State.Apply).
type State struct {
	ID           string    `json:"id"`
	URL          string    `json:"url"`                     // the address the state is about; a new URL starts afresh
	LastCheck    time.Time `json:"last_check"`              // start of the last check
	LastStatus   Outcome   `json:"last_status"`             // its outcome
	LastDetail   string    `json:"last_detail,omitempty"`   // its short reason
	LastAnswered time.Time `json:"last_answered,omitempty"` // start of the last answered check; zero: never answered
	FailingSince time.Time `json:"failing_since,omitempty"` // start of the first failing check of the current streak
	Protocol     string    `json:"protocol,omitempty"`      // protocol version the last answered check that named one learned
	Transport    string    `json:"transport,omitempty"`     // transport it learned
	RetryAfter   time.Time `json:"retry_after,omitempty"`   // not before this time (429/503 Retry-After)
}

// EverAnswered reports whether the server has ever answered a check.
func (s State) EverAnswered() bool { return !s.LastAnswered.IsZero() }

// Apply folds one result into the state. Results older than the last one
// folded are ignored, so replaying a journal twice, or two overlapping runs
// finishing out of order, gives the same state. A newer result for another
// URL than the state's starts a fresh state: a server whose address changed
// is new; an older one, of the address it left, is ignored.
func (s *State) Apply(r Result) {
	if !r.Started.After(s.LastCheck) && !s.LastCheck.IsZero() {
		// Known already, or older than what is: also a check of the address
		// the server left that ends after the first check at its new one
		// (a 45 s timeout), which must not take the new address's result
		// away (the planner would take that check for lost, rule S5).
		return
	}
	if s.URL != r.URL {
		*s = State{ID: r.ID, URL: r.URL}
	}
	s.ID = r.ID
	s.LastCheck = r.Started
	s.LastStatus = r.Status
	s.LastDetail = r.Detail
	s.RetryAfter = r.RetryAfter
	if r.Status == Failing {
		if s.FailingSince.IsZero() {
			s.FailingSince = r.Started
		}
	} else {
		s.FailingSince = time.Time{}
	}
	if !r.Status.Answered() {
		// A check that was not answered never pins a version or transport
		// (a handshake that got through before tools/list failed included):
		// the next check starts from what the last answered one learned, and
		// the flows follow a server that moved from there (rule N4).
		return
	}
	s.LastAnswered = r.Started
	if r.Protocol != "" {
		s.Protocol = r.Protocol
	}
	if r.Transport != "" {
		s.Transport = r.Transport
	}
}
