package check

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"plug.directory/prober/data"
)

// TargetError is why a URL may not be checked (rules N5-N7). Detail is
// the short human text a result shows, e.g. "address carries a credential"
// (data.DetailCredential); every TargetError concludes not_checkable.
type TargetError struct {
	Rule   string // "N5", "N6" or "N7"
	Detail string // the result's detail, a data.Detail* constant
	URL    string // the refused URL, credentials redacted
}

// Error returns the rule and the detail.
func (e *TargetError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Rule, e.Detail, e.URL)
}

// CheckTarget applies rules N5-N7 to u before anything is sent: no user
// info and no query parameter that carries a credential (N5), an IP literal
// host must be a public IPv4 address (N6; lab also allows 127.0.0.0/8), https
// only and port 443 or 8443 (N7). Host names are checked at dial time on the
// address actually dialled. It returns a *TargetError, or nil when u may be
// checked.
func CheckTarget(u *url.URL, lab Lab) error {
	if u == nil || u.Host == "" {
		s := ""
		if u != nil {
			s = redact(u)
		}
		return &TargetError{Rule: "N7", Detail: data.DetailNoAddress, URL: s}
	}
	refuse := func(rule, detail string) error {
		return &TargetError{Rule: rule, Detail: detail, URL: redact(u)}
	}
	if u.User != nil {
		return refuse("N5", data.DetailCredential)
	}
	if credentialQuery(u.RawQuery) {
		return refuse("N5", data.DetailCredential)
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return refuse("N7", data.DetailNotHTTPS)
	}
	if !allowedPort(u.Port()) {
		return refuse("N7", data.DetailPort)
	}
	host := data.LookupName(u.Hostname()) // as it is dialled: "１２７.０.０.１" is 127.0.0.1
	if host == "" {
		return refuse("N7", data.DetailNoAddress)
	}
	if a, err := netip.ParseAddr(host); err == nil && !allowedAddr(a, lab) {
		return refuse("N6", data.DetailNotPublicIPv4)
	}
	return nil
}

// allowedPort reports whether port (empty meaning the https default) is one
// of data.AllowedPorts (rule N7).
func allowedPort(port string) bool {
	if port == "" {
		port = "443"
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || strconv.FormatUint(n, 10) != port {
		return false
	}
	for _, p := range data.AllowedPorts {
		if uint16(n) == p {
			return true
		}
	}
	return false
}

// Credential names of query parameters (rule N5), matched against a name
// normalized by credentialParam: lowercased letters only, so "api_key",
// "API-Key", "apiKey[]", "api_key1" and "api%5Fkey" are all "apikey". A false
// positive only makes a server not checkable; a false negative would send a
// credential, so the lists err on the safe side. Session ids (sessionId, as
// legacy SSE endpoints name them) are not credentials.
var (
	// credentialWords are refused wherever they occur in a name
	// (mcpToken, tokens, client_secret, X-Amz-Credential, db.password).
	credentialWords = []string{"token", "secret", "passw", "passphrase", "apikey", "accesskey",
		"privatekey", "licensekey", "credential", "signature"}
	// credentialSuffixes are refused at the end of a name only, being
	// parts of ordinary words elsewhere (keyword, author):
	// subscription-key, keys, AWSAccessKeyId, x-auth, sig, id_jwt.
	credentialSuffixes = []string{"key", "keys", "keyid", "auth", "authorization", "pwd", "sig", "jwt", "bearer"}
	// credentialNames are refused as whole names only.
	credentialNames = []string{"pass"}
)

// credentialParam reports whether a query parameter name, already
// percent-decoded, carries a credential. The name is normalized first:
// lowercased, and everything but letters dropped (separators, brackets,
// digits, control characters: "token[]", "token1", "token\t" are "token").
func credentialParam(name string) bool {
	n := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, name)
	if n == "" {
		return false
	}
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, s := range credentialSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return slices.Contains(credentialNames, n)
}

// credentialQuery reports whether a raw query names a credential parameter.
// It splits on '&' and ';' itself so a malformed query cannot hide one.
func credentialQuery(raw string) bool {
	if raw == "" {
		return false
	}
	for _, part := range strings.FieldsFunc(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if credentialParam(name) {
			return true
		}
	}
	return false
}

// redact returns u for the transcript with every credential it carries
// replaced by "xxxxx": the whole user info (a lone user name is often a
// token) and the values of credential query parameters.
func redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.User == nil && !credentialQuery(u.RawQuery) {
		return u.String()
	}
	c := *u
	if c.User != nil {
		c.User = url.User("xxxxx")
	}
	if c.RawQuery != "" {
		parts := strings.FieldsFunc(c.RawQuery, func(r rune) bool { return r == '&' || r == ';' })
		for i, part := range parts {
			name, _, hasValue := strings.Cut(part, "=")
			n, err := url.QueryUnescape(name)
			if err != nil {
				n = name
			}
			if hasValue && credentialParam(n) {
				parts[i] = name + "=xxxxx"
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	return c.String()
}

// checkRedirect is the client's redirect policy (rule N8): at most
// data.MaxRedirects hops, each target passing N5-N7 again, and never a
// redirect that changes the method (301/302/303 turn POST into GET, which
// would send a different request than the one the check means). A refused
// hop is recorded as an exchange that was never sent.
func (g *Guard) checkRedirect(req *http.Request, via []*http.Request) error {
	hop := len(via)
	prev := via[len(via)-1]
	var gerr *GuardError
	switch {
	case hop > data.MaxRedirects:
		gerr = &GuardError{Kind: ErrTooManyRedirects, Rule: "N8",
			Detail: fmt.Sprintf("more than %d redirects", data.MaxRedirects)}
	case req.Method != prev.Method:
		gerr = &GuardError{Kind: ErrRedirectMethodChange, Rule: "N8",
			Detail: fmt.Sprintf("redirect turns %s into %s", prev.Method, req.Method)}
	default:
		if err := CheckTarget(req.URL, g.cfg.Lab); err != nil {
			te := err.(*TargetError)
			gerr = &GuardError{Kind: ErrRedirectNotAllowed, Rule: te.Rule,
				Detail: redirectWhy(te, req.URL), Err: err}
		} else if g.otherHost(req.URL) {
			gerr = &GuardError{Kind: ErrRedirectNotAllowed, Rule: "S3", Detail: "redirect to another host"}
		}
	}
	if gerr == nil {
		return nil
	}
	ex := &Exchange{Start: g.now(), Method: req.Method, URL: redact(req.URL), Hop: hop,
		Blocked: gerr.Rule + ": " + gerr.Detail, ErrKind: gerr.Kind, Detail: gerr.Detail, Err: gerr.Error()}
	src := req
	if src.GetBody == nil { // a POST turned into GET lost its body: name the message it carried
		src = prev
	}
	if src.GetBody != nil {
		if body, err := src.GetBody(); err == nil {
			b, _ := readRequestBody(body)
			ex.RPCMethod, ex.RPCID, _ = inspectRPC(b)
		}
	}
	g.append(ex)
	return gerr
}

// otherHost reports whether u is on another host than the check's, the
// host of its first request (pinned here by that first call). A check counts
// against one host's caps (rule S3), the host the planner planned it under:
// a redirect or a legacy-SSE endpoint that leads elsewhere would send
// requests to a host whose caps never counted them, so the check does not
// follow it (not_checkable). Another port or path on the same host is the
// same host. Hosts compare as the planner keys them (data.HostOf: lowercased,
// IDNA-mapped as the name looked up).
func (g *Guard) otherHost(u *url.URL) bool {
	h := data.HostOf(u.String())
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.host == "" {
		g.host = h
		return false
	}
	return h != g.host
}

// redirectWhy is the Detail of a refused redirect target, e.g. "redirect to
// http://" or "redirect to port 8080".
func redirectWhy(te *TargetError, u *url.URL) string {
	switch te.Detail {
	case data.DetailCredential:
		return "redirect to an address with a credential"
	case data.DetailNotHTTPS:
		return "redirect to " + strings.ToLower(u.Scheme) + "://"
	case data.DetailPort:
		return "redirect to port " + u.Port()
	case data.DetailNotPublicIPv4:
		return "redirect to a non-public address"
	}
	return "redirect to " + te.Detail
}
