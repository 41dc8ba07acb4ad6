package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"plug.directory/prober/data"
)

// verdict is the outcome of table O a check concludes and its short human
// reason.
type verdict struct {
	status data.Outcome
	detail string
}

// classifyContext is how the check ended, beyond the record and findings.
type classifyContext struct {
	deadline  bool          // the check's deadline passed (rule N10)
	cancelled bool          // the caller cancelled the check
	timeout   time.Duration // the check's deadline, for the reason
}

// classify concludes the outcome of a check (table O) from what the guard
// recorded and what the flows found, in this order: a valid tools/list is
// working; a refusal (401, 403, 429) decides next; then the transport failure
// that ended the check; then the deadline; then the last answer's status and
// content; then protocol errors. It never reads error strings.
func classify(rec Record, fd findings, cc classifyContext) verdict {
	if fd.ToolsOK {
		return verdict{data.Working, toolsDetail(fd)}
	}
	if v, ok := refusalVerdict(rec); ok {
		return v
	}
	if ex, ok := failedExchange(rec, cc.deadline); ok {
		if v, ok := transportVerdict(ex, cc); ok {
			return v
		}
	}
	if cc.deadline {
		return verdict{data.Failing, noAnswer(cc.timeout)}
	}
	if cc.cancelled {
		// The prober stopped (a shutdown), not the server: this must not
		// count against it.
		return verdict{data.NotCheckable, "check cancelled by the prober"}
	}
	if ex, ok := lastAnswer(rec); ok {
		if v, ok := answerVerdict(ex, fd); ok {
			return v
		}
	}
	return protocolVerdict(fd)
}

// toolsDetail is the reason of a working result: the tool count and why the
// list may be incomplete.
func toolsDetail(fd findings) string {
	var s string
	switch n := len(fd.Tools); n {
	case 0:
		s = "no tools"
	case 1:
		s = "1 tool"
	default:
		s = strconv.Itoa(n) + " tools"
	}
	if fd.ToolsNote != "" {
		s += " (" + fd.ToolsNote + ")"
	}
	return s
}

// refusalVerdict reads the first refusal the guard saw (after which nothing
// more was sent): 401 and a 403 with a challenge ask for a key; 429, a 403
// without a challenge and a bot-challenge page refuse the check.
func refusalVerdict(rec Record) (verdict, bool) {
	ex, ok := refusal(rec)
	if !ok {
		return verdict{}, false
	}
	challenge := ex.Header.Get("WWW-Authenticate")
	switch {
	case botChallenge(ex):
		return verdict{data.Refused, "refused: bot challenge page"}, true
	case ex.Status == http.StatusForbidden && hostCheckRefusal(ex.BodyHead):
		return verdict{data.Failing, hostCheckDetail}, true
	case ex.Status == http.StatusUnauthorized:
		return verdict{data.NeedsKey, keyDetail(challenge, ex.Status)}, true
	case ex.Status == http.StatusForbidden && challenge != "":
		return verdict{data.NeedsKey, keyDetail(challenge, ex.Status)}, true
	}
	return verdict{data.Refused, fmt.Sprintf("refused: HTTP %d", ex.Status)}, true
}

// refusal returns the exchange of the first refusal the guard saw.
func refusal(rec Record) (Exchange, bool) {
	if rec.Refusal == 0 {
		return Exchange{}, false
	}
	for _, e := range rec.Exchanges {
		if e.Status == rec.Refusal {
			return e, true
		}
	}
	return Exchange{Status: rec.Refusal}, true
}

// keyInfo is where a server that asks for a key says to learn how to get
// one: the resource_metadata its challenge announces (MCP's OAuth
// discovery: the protected resource metadata, naming its authorization
// servers), when it is a data.WebLink; "" otherwise. The check never
// fetches it (rule N3: it sends nothing but its own requests).
func keyInfo(rec Record) string {
	ex, ok := refusal(rec)
	if !ok {
		return ""
	}
	return data.WebLink(authParam(ex.Header.Get("WWW-Authenticate"), "resource_metadata"))
}

// authParam returns the value of the auth-param name in a WWW-Authenticate
// challenge (RFC 9110 section 11.2: name=token or name="quoted string"),
// "" when it has none.
func authParam(challenge, name string) string {
	quoted := false // inside a quoted string, where a name is only text
	for i := 0; i < len(challenge); i++ {
		switch c := challenge[i]; {
		case quoted && c == '\\':
			i++
			continue
		case c == '"':
			quoted = !quoted
			continue
		case quoted || i+len(name) > len(challenge) || !strings.EqualFold(challenge[i:i+len(name)], name) ||
			i > 0 && !strings.ContainsRune(" ,\t", rune(challenge[i-1])):
			continue
		}
		rest := strings.TrimLeft(challenge[i+len(name):], " \t")
		if !strings.HasPrefix(rest, "=") {
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		if v, ok := strings.CutPrefix(rest, `"`); ok {
			var b strings.Builder
			for k := 0; k < len(v); k++ {
				switch v[k] {
				case '"':
					return b.String()
				case '\\':
					k++
					if k < len(v) {
						b.WriteByte(v[k])
					}
				default:
					b.WriteByte(v[k])
				}
			}
			return "" // an unterminated quoted string
		}
		if end := strings.IndexAny(rest, " \t,"); end >= 0 {
			return rest[:end]
		}
		return rest
	}
	return ""
}

// keyDetail names what the server asks for: OAuth only where the challenge
// announces it (resource_metadata, MCP's OAuth discovery: @azure/mcp,
// mcp-handler's withMcpAuth); a Bearer challenge without it asks for a
// token (n8n-mcp's static token: Bearer realm="n8n-mcp"); else the scheme,
// else the status.
func keyDetail(challenge string, status int) string {
	lower := strings.ToLower(challenge)
	scheme, _, _ := strings.Cut(strings.TrimSpace(challenge), " ")
	switch {
	case strings.Contains(lower, "resource_metadata"):
		return "needs a key (OAuth)"
	case strings.EqualFold(scheme, "bearer"):
		return "needs a key (token)"
	case scheme != "" && isToken(scheme) && len(scheme) <= 20:
		return "needs a key (" + scheme + ")"
	}
	return fmt.Sprintf("needs a key: HTTP %d", status)
}

// hostCheckDetail is the reason of a 403 that a server's own DNS-rebinding
// protection gives every client at its public name: not a refusal of our
// check, the server is broken for everyone there.
const hostCheckDetail = "HTTP 403: the server refuses its own public name (its Host check allows only localhost)"

// hostCheckMarkers are the bodies of the Host checks of MCP servers, each as
// its source writes it:
//   - go-sdk's StreamableHTTPHandler and SSEHandler on a loopback listener
//     (mcp/streamable.go, mcp/sse.go: http.Error(w, fmt.Sprintf("Forbidden:
//     invalid Host header %q", req.Host), 403));
//   - @playwright/mcp: "Access is only allowed at localhost:PORT";
//   - the TypeScript SDK's hostHeaderValidation (validateHostHeader in
//     @modelcontextprotocol/server, and enableDnsRebindingProtection of its
//     StreamableHTTPServerTransport): a JSON-RPC error -32000 with the
//     message "Invalid Host header: …" or "Invalid Host: …".
var hostCheckMarkers = []string{
	`Forbidden: invalid Host header "`,
	"Access is only allowed at localhost",
	`"Invalid Host header: `,
	`"Invalid Host: `,
}

// hostCheckRefusal reports whether a 403's body is one of hostCheckMarkers.
func hostCheckRefusal(body []byte) bool {
	for _, m := range hostCheckMarkers {
		if bytes.Contains(body, []byte(m)) {
			return true
		}
	}
	return false
}

// isToken reports whether s is an HTTP token made of letters, digits and '-'.
func isToken(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-') {
			return false
		}
	}
	return true
}

// challengeHeaders mark an answer as a bot challenge whatever its status:
// the headers the big edges document for exactly that, nothing looser.
var challengeHeaders = []struct{ name, value string }{
	// Cloudflare: "the Challenge Page response (regardless of the Challenge
	// Page type) will have the cf-mitigated header present and set to
	// challenge" (developers.cloudflare.com/cloudflare-challenges/
	// challenge-pages/detect-response).
	{"Cf-Mitigated", "challenge"},
	// AWS WAF: x-amzn-waf-action "challenge" (with 202) or "captcha" (with
	// 405) (docs.aws.amazon.com/waf/latest/developerguide/
	// waf-captcha-and-challenge-actions.html).
	{"X-Amzn-Waf-Action", "challenge"},
	{"X-Amzn-Waf-Action", "captcha"},
	// Vercel's attack challenge mode / security checkpoint.
	{"X-Vercel-Mitigated", "challenge"},
	// DataDome adds X-DD-B to a block answered as JSON
	// (docs.datadome.co/reference/validate-request); any value.
	{"X-Dd-B", ""},
}

// challengeMarkers mark the first 4 KiB of an error answer (status 400 and
// above) as a bot challenge: strings the challenge pages carry and ordinary
// pages do not. Words such as "captcha" are not markers: a landing page
// embedding reCAPTCHA is no challenge of ours. Cloudflare's
// /cdn-cgi/challenge-platform/ is not one either: its bot detection injects
// that script into ordinary pages (its challenge pages carry Cf-Mitigated).
var challengeMarkers = []string{
	"window._cf_chl_opt",    // Cloudflare's challenge page script
	`"sec-cp-challenge"`,    // Akamai Bot Manager's crypto/behavioral challenge (428), as JSON
	"/_sec/cp_challenge/",   // ... and its HTML interstitial
	"Incapsula incident ID", // Imperva (Incapsula) block page
	"captcha-delivery.com",  // DataDome's challenge page, served from geo.captcha-delivery.com
}

// botChallenge reports whether an answer is a bot-challenge page (a CDN's
// "checking your browser" wall) rather than the server's own: a documented
// challenge header, or on an error status a challenge page's marker.
func botChallenge(ex Exchange) bool {
	for _, h := range challengeHeaders {
		v := ex.Header.Values(h.name)
		if len(v) > 0 && (h.value == "" || strings.EqualFold(strings.TrimSpace(v[0]), h.value)) {
			return true
		}
	}
	if ex.Status < 400 {
		return false
	}
	for _, marker := range challengeMarkers {
		if bytes.Contains(ex.BodyHead, []byte(marker)) {
			return true
		}
	}
	return false
}

// failedExchange returns the last exchange that failed at the transport
// level: the failure that ended the check. Messages the guard kept from
// leaving (N2, N3, after a refusal) are not failures of the server, nor are
// reads the check cancelled itself before its deadline.
func failedExchange(rec Record, deadline bool) (Exchange, bool) {
	for i := len(rec.Exchanges) - 1; i >= 0; i-- {
		ex := rec.Exchanges[i]
		switch ex.ErrKind {
		case ErrNone, ErrBlocked:
			continue
		case ErrCanceled:
			if !deadline {
				continue // the check stopped reading, e.g. a stream after its answer
			}
		}
		return ex, true
	}
	return Exchange{}, false
}

// transportVerdict turns the guard's failure kind into an outcome.
func transportVerdict(ex Exchange, cc classifyContext) (verdict, bool) {
	detail := func(prefix, fallback string) string {
		d := ex.Detail
		if d == "" {
			d = fallback
		}
		if strings.HasPrefix(d, prefix) {
			return d
		}
		return prefix + d
	}
	switch ex.ErrKind {
	case ErrDNSNotFound:
		return verdict{data.Failing, reasonDNSNoAddress}, true
	case ErrDNS:
		return verdict{data.Failing, detail("DNS: ", "lookup failed")}, true
	case ErrNoPublicAddr:
		return verdict{data.NotCheckable, "resolves to no public IPv4 address"}, true
	case ErrRefused:
		return verdict{data.Failing, "connection refused"}, true
	case ErrTimeout:
		if cc.deadline {
			return verdict{data.Failing, noAnswer(cc.timeout)}, true
		}
		return verdict{data.Failing, detail("", "timed out")}, true
	case ErrTLSCert:
		return verdict{data.Failing, detail("TLS: ", "certificate not accepted")}, true
	case ErrTLSOther:
		return verdict{data.Failing, "TLS: handshake failed"}, true
	case ErrTooLarge: // the guard's detail: the answer, its headers or its bytes on the wire
		return verdict{data.Failing, detail("", "answer over 1 MB")}, true
	case ErrRequestCap:
		return verdict{data.Failing, ex.Detail}, true
	case ErrTooManyRedirects:
		return verdict{data.Failing, "too many redirects"}, true
	case ErrRedirectNotAllowed, ErrTargetNotAllowed:
		return verdict{data.NotCheckable, detail("", "redirected to an address we do not check")}, true
	case ErrRedirectMethodChange:
		// Not in table O's refused list (429, 403, bot challenge): a server
		// whose MCP endpoint cannot take a POST is a protocol error.
		return verdict{data.Failing, detail("protocol error: ", "redirect turns POST into GET")}, true
	case ErrCanceled:
		if cc.deadline {
			return verdict{data.Failing, noAnswer(cc.timeout)}, true
		}
		return verdict{}, false
	case ErrNetwork:
		return verdict{data.Failing, detail("connection failed: ", "closed by the server")}, true
	case ErrLocal:
		// The prober's own failure (its source address): never the server's.
		return verdict{data.NotCheckable, ex.Detail}, true
	}
	return verdict{}, false
}

// noAnswer is the reason of a check that ran out of time: "no answer in 45 s".
func noAnswer(d time.Duration) string {
	return "no answer in " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// lastAnswer returns the last exchange that got an HTTP answer.
func lastAnswer(rec Record) (Exchange, bool) {
	for i := len(rec.Exchanges) - 1; i >= 0; i-- {
		if ex := rec.Exchanges[i]; ex.Status != 0 && ex.ErrKind != ErrBlocked {
			return ex, true
		}
	}
	return Exchange{}, false
}

// answerVerdict reads the last answer: an error status is "HTTP 502" (with
// the JSON-RPC error code when its body carried one); a success that is not
// MCP is named for what it is. It reports false for an answer that looks
// like JSON-RPC, which leaves the reason to the protocol.
func answerVerdict(ex Exchange, fd findings) (verdict, bool) {
	if ex.Status >= 300 {
		if botChallenge(ex) {
			return verdict{data.Refused, "refused: bot challenge page"}, true
		}
		if fd.RPCErr != nil && fd.RPCMethod == ex.RPCMethod && ex.RPCMethod != "" {
			return verdict{data.Failing, fmt.Sprintf("HTTP %d, error %d", ex.Status, fd.RPCErr.Code)}, true
		}
		return verdict{data.Failing, fmt.Sprintf("HTTP %d", ex.Status)}, true
	}
	if botChallenge(ex) {
		return verdict{data.Refused, "refused: bot challenge page"}, true
	}
	if why := notMCP(ex); why != "" {
		return verdict{data.Failing, "not MCP: " + why}, true
	}
	return verdict{}, false
}

// isHTML reports whether an answer is an HTML page, by type or by content.
func isHTML(ex Exchange) bool {
	if mediaType(ex) == "text/html" {
		return true
	}
	head := bytes.ToLower(bytes.TrimSpace(ex.BodyHead))
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html"))
}

// mediaType returns the answer's lowercased media type, "" if none.
func mediaType(ex Exchange) string {
	mt, _, err := mime.ParseMediaType(ex.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// notMCP says what a successful answer is when it is not an MCP answer, or
// "" when it looks like one (JSON-RPC, an event stream carrying JSON-RPC or
// the legacy endpoint event, or an empty 202 to a notification).
func notMCP(ex Exchange) string {
	if isHTML(ex) {
		return "HTML page"
	}
	head := bytes.TrimSpace(ex.BodyHead)
	switch mt := mediaType(ex); {
	case ex.Status == http.StatusAccepted || ex.Status == http.StatusNoContent:
		return ""
	case mt == "text/event-stream":
		if ex.Method == http.MethodGet && ex.RPCMethod == "" && len(head) > 0 && !bytes.Contains(head, []byte("endpoint")) {
			return "no endpoint event"
		}
		if len(head) == 0 {
			return "" // nothing read: the deadline or the protocol decides
		}
		if !bytes.Contains(head, []byte("data:")) {
			return "event stream without data"
		}
		return ""
	case len(head) == 0:
		return "empty answer"
	case mt == "application/json" || (mt == "" && (head[0] == '{' || head[0] == '[')):
		return jsonNotRPC(head, ex.Bytes)
	case mt == "":
		return "answer without a content type"
	default:
		return "content type " + mt
	}
}

// jsonNotRPC says what a JSON answer is when it is not a JSON-RPC message, or
// "" when it is (or cannot be told from its first 4 KiB).
func jsonNotRPC(head []byte, total int64) string {
	complete := int64(len(head)) == total
	if complete && !json.Valid(head) {
		return "not JSON"
	}
	if !complete {
		if bytes.Contains(head, []byte(`"jsonrpc"`)) {
			return ""
		}
		return "JSON that is not JSON-RPC"
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(head, &msg) != nil {
		return "JSON that is not JSON-RPC" // an array or a scalar
	}
	if _, ok := msg["jsonrpc"]; !ok {
		return "JSON that is not JSON-RPC"
	}
	return ""
}

// protocolVerdict names the protocol error that ended a check in which the
// server answered with well-formed JSON-RPC.
func protocolVerdict(fd findings) verdict {
	switch {
	case fd.ToolsMissing:
		return verdict{data.Failing, "protocol error: tools/list result has no tools array"}
	case fd.ToolUnnamed:
		return verdict{data.Failing, "protocol error: tools/list result has a tool without a name"}
	case fd.ToolsUnread != "":
		return verdict{data.Failing, "protocol error: tools/list " + fd.ToolsUnread}
	case fd.BadVersion != "":
		return verdict{data.Failing, "protocol error: unsupported protocol version " + printable(fd.BadVersion, 20)}
	case fd.RPCErr != nil:
		return verdict{data.Failing, fmt.Sprintf("protocol error: %s answered error %d", fd.RPCMethod, fd.RPCErr.Code)}
	case fd.Handshake:
		return verdict{data.Failing, "protocol error: no valid tools/list result"}
	}
	return verdict{data.Failing, "protocol error: no valid handshake"}
}

// printable returns s quoted, cut to n runes, for a reason shown on a page.
func printable(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = append(r[:n], '…')
	}
	return strconv.Quote(string(r))
}

// fillCounts copies the record's counts into the result: last HTTP status,
// requests sent, connections, bytes read, and Retry-After (429 or 503).
func fillCounts(res *data.Result, rec Record, now func() time.Time) {
	res.Requests = rec.Requests
	res.Conns = rec.Conns
	res.BytesRead = rec.BytesRead
	res.TLS, res.Timings = rec.TLS, rec.Timings
	if ex, ok := lastAnswer(rec); ok {
		res.HTTPStatus = ex.Status
	}
	for _, ex := range rec.Exchanges {
		if ex.Status != http.StatusTooManyRequests && ex.Status != http.StatusServiceUnavailable {
			continue
		}
		if t, ok := retryAfter(ex.Header.Get("Retry-After"), ex.Start, now); ok {
			res.RetryAfter = t
		}
	}
}

// retryAfter parses a Retry-After value, delay-seconds or an HTTP date,
// relative to when the request started (or now).
func retryAfter(v string, start time.Time, now func() time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if start.IsZero() {
		start = now()
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return start.Add(time.Duration(secs) * time.Second).UTC(), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}
