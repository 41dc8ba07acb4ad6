package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/runner/check"
)

// OneOffConfig is what a one-off check does.
type OneOffConfig struct {
	URL       string        // the server's address
	JSON      bool          // print one JSON object instead of text
	Source    netip.Addr    // source address (rule N11); zero means any
	Protocol  string        // protocol version learned before, "" to discover it
	Transport string        // transport learned before, "" to discover it
	Lab       check.Lab     // lab setting, off by default
	Timeout   time.Duration // whole check; at most data.CheckTimeout (rule N10)
}

// Validate reports a missing URL, a timeout outside (0, 45 s], a transport
// that is not one of the two, or a lab option without -lab.
func (c OneOffConfig) Validate() error {
	if c.URL == "" {
		return errors.New("-url is empty")
	}
	if c.Timeout <= 0 || c.Timeout > data.CheckTimeout {
		return fmt.Errorf("-timeout %v: want more than 0 and at most %v (rule N10)", c.Timeout, data.CheckTimeout)
	}
	switch c.Transport {
	case "", data.TransportStreamable, data.TransportSSE:
	default:
		return fmt.Errorf("-transport %q: want %s or %s", c.Transport, data.TransportStreamable, data.TransportSSE)
	}
	return c.Lab.Validate()
}

// runOneOff is `run check` (and `run -url` without a mode's name): it
// checks one server now and prints the result. It returns an
// exitError of status 1 when the server did not answer, 2 on bad usage.
func runOneOff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg OneOffConfig
	fs := flag.NewFlagSet("run check", flag.ContinueOnError)
	fs.StringVar(&cfg.URL, "url", "", "check the MCP server at this `address` now (https://host/mcp)")
	fs.BoolVar(&cfg.JSON, "json", false, "print the result and transcript as one JSON object")
	fs.Func("source", "leave from this local IPv4 `address` (rule N11)", func(v string) error {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return err
		}
		cfg.Source = a
		return nil
	})
	fs.StringVar(&cfg.Protocol, "protocol", "", "protocol `version` learned before (skips discovery), e.g. 2025-11-25")
	fs.StringVar(&cfg.Transport, "transport", "", "transport learned before: streamable-http or sse")
	fs.DurationVar(&cfg.Timeout, "timeout", data.CheckTimeout, "give up after this `duration` (at most 45s)")
	cfg.Lab.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: run -url https://host/mcp [-json] [-source ADDR] [-protocol V -transport T] [-timeout D] [-lab [-resolve host:port:addr]... [-ca-file FILE]]")
		fmt.Fprintln(fs.Output(), "       run check https://host/mcp [same flags]")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	if strings.HasPrefix(cfg.URL, "-") {
		// -url swallowed the next flag: "run -url -h" asks for this usage.
		if h := strings.TrimLeft(cfg.URL, "-"); h == "h" || h == "help" {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil
		}
		return usageError(fmt.Errorf("-url %s: want the server's address (https://host/mcp), not a flag", cfg.URL))
	}
	if err := cfg.Validate(); err != nil {
		return usageError(err)
	}
	checker, err := check.New(check.Config{SourceAddr: cfg.Source, Lab: cfg.Lab, Timeout: cfg.Timeout})
	if err != nil {
		return usageError(err)
	}
	start := time.Now()
	res, rec := checker.Check(ctx, check.Target{ID: "one-off", URL: cfg.URL, Protocol: cfg.Protocol, Transport: cfg.Transport})
	res.Stamp(data.PlannedCheck{ID: "one-off", URL: cfg.URL, Reason: data.ReasonManual}, start, time.Now(), 0)
	if cfg.JSON {
		err = writeJSON(stdout, res, rec)
	} else {
		err = writeText(stdout, res, rec)
	}
	if err != nil {
		return fmt.Errorf("print result: %w", err)
	}
	if !res.Status.Answered() {
		return cli.Exit(cli.ExitFailure, nil)
	}
	return nil
}

// oneOffJSON is the -json output, the complete one for debugging
// (cmd/run/testdata/oneoff.schema.json): the result, what each connection
// and each request saw. A value that does not apply is null; durations are
// milliseconds. It is not the journal's data.Result, whose shape the
// history keeps.
type oneOffJSON struct {
	Status        data.Outcome       `json:"status"`
	Label         string             `json:"label"`
	Detail        string             `json:"reason"` // the outcome's short human detail (data.Result.Detail); "reason" in the JSON, as published
	URL           string             `json:"url"`
	Host          string             `json:"host"`
	HTTPStatus    *int               `json:"http_status"`
	Protocol      *string            `json:"protocol"`
	Transport     *string            `json:"transport"`
	ServerName    *string            `json:"server_name"`
	ServerVersion *string            `json:"server_version"`
	ToolCount     int                `json:"tool_count"`
	Tools         []string           `json:"tools"`
	ToolProblems  []data.ToolProblem `json:"tool_problems"` // what clients will reject in the tools listed: advice; [] when none, null when none were listed
	Started       time.Time          `json:"started"`
	Finished      time.Time          `json:"finished"`
	DurationMS    float64            `json:"duration_ms"`
	Requests      int                `json:"requests"`
	Conns         int                `json:"conns"`
	BytesRead     int64              `json:"bytes_read"`
	RetryAfter    *time.Time         `json:"retry_after"`
	ProberVersion string             `json:"prober_version"`
	UserAgent     string             `json:"user_agent"`
	Connections   []connectionJSON   `json:"connections"`
	Transcript    []exchangeJSON     `json:"transcript"`
	TLS           *tlsJSON           `json:"tls"`
	Timings       *timingsJSON       `json:"timings"`

	// How the server spoke: the versions
	// server/discover listed, whether it kept a session (null: no
	// handshake succeeded), how its answers came ("json", "sse", "mixed").
	DiscoverVersions []string `json:"discover_versions"`
	Session          *bool    `json:"session"`
	Answers          *string  `json:"answers"`
}

// tlsJSON is the TLS session and certificate the check saw.
type tlsJSON struct {
	Version  *string   `json:"version"`
	NotAfter time.Time `json:"not_after"`
	DaysLeft int       `json:"days_left"` // calendar days (UTC) from the output's day to the day of expiry (data.TLSInfo.DaysLeft)
	Issuer   string    `json:"issuer"`
	Names    []string  `json:"names"`
}

// timingsJSON is where the check's time went, in milliseconds.
type timingsJSON struct {
	DNSMS       *float64  `json:"dns_ms"`
	ConnectMS   *float64  `json:"connect_ms"`
	TLSMS       *float64  `json:"tls_ms"`
	FirstByteMS []float64 `json:"first_byte_ms"`
	TotalMS     float64   `json:"total_ms"`
}

// connectionJSON is one connection of the check: the address dialled and
// the TLS session.
type connectionJSON struct {
	N            int        `json:"n"` // what exchangeJSON.Conn refers to
	RemoteAddr   string     `json:"remote_addr"`
	TLSVersion   *string    `json:"tls_version"`
	ALPN         *string    `json:"alpn"`
	CipherSuite  *string    `json:"cipher_suite"`
	CertSubject  *string    `json:"cert_subject"`
	CertIssuer   *string    `json:"cert_issuer"`
	CertDNSNames []string   `json:"cert_dns_names"`
	CertNotAfter *time.Time `json:"cert_not_after"`
}

// exchangeJSON is one request of the transcript.
type exchangeJSON struct {
	AtMS         float64           `json:"at_ms"` // since the first request
	Method       string            `json:"method"`
	URL          string            `json:"url"`
	Hop          int               `json:"hop"` // 0, or the n-th redirect
	RPCMethod    *string           `json:"rpc_method"`
	RPCID        *string           `json:"rpc_id"`
	Conn         *int              `json:"conn"` // connections[].n it went out on
	Status       *int              `json:"status"`
	DurationMS   float64           `json:"duration_ms"`
	Bytes        int64             `json:"bytes"`
	Headers      map[string]string `json:"headers"` // the answer headers that matter, those present
	MCPSessionID bool              `json:"mcp_session_id"`
	ErrorBody    *string           `json:"error_body"` // first bytes of an answer of status 400 and above
	SSEEvents    []sseEventJSON    `json:"sse_events"` // complete events in the first 4 KiB of an event stream
	NotSent      *string           `json:"not_sent"`   // why the guard refused to send it
	Error        *string           `json:"error"`
	ErrKind      *string           `json:"err_kind"`
}

// sseEventJSON is one server-sent event.
type sseEventJSON struct {
	Event string `json:"event"`
	Data  string `json:"data"`
}

// shownHeaders are the answer headers the transcript shows: what an owner
// needs to see why a check concluded as it did.
var shownHeaders = []string{"Content-Type", "WWW-Authenticate", "Retry-After", "Location",
	"Cf-Mitigated", "X-Amzn-Waf-Action", "X-Vercel-Mitigated"}

// errorBodyBytes is how much of an error answer the transcript shows.
const errorBodyBytes = 512

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// msOrNull is ms of *d, nil for nil.
func msOrNull(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	v := ms(*d)
	return &v
}

// factsJSON returns the -json form of what the check saw on its way.
func factsJSON(res data.Result, now time.Time) (*tlsJSON, *timingsJSON) {
	var tj *tlsJSON
	if t := res.TLS; t != nil {
		tj = &tlsJSON{Version: orNull(t.Version), NotAfter: t.NotAfter, DaysLeft: t.DaysLeft(now), Issuer: t.Issuer, Names: t.Names}
		if tj.Names == nil {
			tj.Names = []string{}
		}
	}
	var mj *timingsJSON
	if t := res.Timings; t != nil {
		mj = &timingsJSON{DNSMS: msOrNull(t.DNS), ConnectMS: msOrNull(t.Connect), TLSMS: msOrNull(t.TLS), FirstByteMS: []float64{}, TotalMS: ms(res.Duration)}
		for _, d := range t.FirstByte {
			mj.FirstByteMS = append(mj.FirstByteMS, ms(d))
		}
	}
	return tj, mj
}

// factsText says what the check saw on its way, a line each: the
// certificate and its days left, and where the time went.
func factsText(res data.Result, now time.Time) (cert, timings string) {
	if t := res.TLS; t != nil {
		when := data.ExpiresIn(t.DaysLeft(now))
		if t.Expired(now) {
			when = "expired"
		}
		cert = fmt.Sprintf("%s %s, %s; issued by %s for %s", when, t.NotAfter.Format(time.RFC3339), cmp.Or(t.Version, "TLS version not agreed"),
			t.Issuer, strings.Join(t.Names, ", "))
	}
	if t := res.Timings; t != nil {
		phase := func(name string, d *time.Duration) string {
			if d == nil {
				return name + " none"
			}
			return name + " " + d.Round(time.Millisecond/10).String()
		}
		parts := []string{phase("DNS", t.DNS), phase("connect", t.Connect), phase("TLS", t.TLS)}
		var fb []string
		for _, d := range t.FirstByte {
			fb = append(fb, d.Round(time.Millisecond/10).String())
		}
		if len(fb) > 0 {
			parts = append(parts, "first byte "+strings.Join(fb, ", "))
		}
		timings = strings.Join(parts, ", ") + "; total " + res.Duration.Round(time.Millisecond).String()
	}
	return cert, timings
}

// protocolText says how the server spoke: the version
// and transport negotiated, whether it kept a session, how its answers
// came and what server/discover listed; "" when the check learned none of
// it.
func protocolText(res data.Result) string {
	var parts []string
	if res.Protocol != "" {
		parts = append(parts, res.Protocol+" over "+res.Transport)
	}
	if p := res.Support; p != nil {
		if p.Session != nil {
			parts = append(parts, map[bool]string{true: "keeps a session", false: "no session"}[*p.Session])
		}
		if a, ok := map[string]string{data.AnswersJSON: "answers as JSON", data.AnswersSSE: "answers as event streams",
			data.AnswersMixed: "answers as JSON and as event streams"}[p.Answers]; ok {
			parts = append(parts, a)
		}
		if len(p.Versions) > 0 {
			parts = append(parts, "server/discover lists "+strings.Join(p.Versions, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// orNull returns nil for the zero value, else a pointer to v.
func orNull[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// writeJSON prints the result and transcript as one JSON object.
func writeJSON(w io.Writer, res data.Result, rec check.Record) error {
	out := oneOffJSON{
		Status: res.Status, Label: res.Status.Label(), Detail: res.Detail,
		URL: res.URL, Host: res.Host, HTTPStatus: orNull(res.HTTPStatus),
		Protocol: orNull(res.Protocol), Transport: orNull(res.Transport),
		ServerName: orNull(res.ServerName), ServerVersion: orNull(res.ServerVersion),
		ToolCount: res.ToolCount, Tools: res.Tools,
		Started: res.Started, Finished: res.Finished, DurationMS: ms(res.Duration),
		Requests: res.Requests, Conns: res.Conns, BytesRead: res.BytesRead,
		RetryAfter:    orNull(res.RetryAfter),
		ProberVersion: res.ProberVersion, UserAgent: data.UserAgent(),
		Connections: []connectionJSON{}, Transcript: []exchangeJSON{},
	}
	if out.Tools == nil {
		out.Tools = []string{}
	}
	if res.Status == data.Working {
		out.ToolProblems = append([]data.ToolProblem{}, res.ToolProblems...)
	}
	out.TLS, out.Timings = factsJSON(res, res.Finished)
	if p := res.Support; p != nil {
		out.DiscoverVersions, out.Session, out.Answers = p.Versions, p.Session, orNull(p.Answers)
	}
	for i, c := range rec.ConnInfos {
		cj := connectionJSON{
			N: i + 1, RemoteAddr: c.RemoteAddr, TLSVersion: orNull(c.TLSVersion), ALPN: orNull(c.ALPN),
			CipherSuite: orNull(c.CipherSuite), CertSubject: orNull(c.CertSubject), CertIssuer: orNull(c.CertIssuer),
			CertDNSNames: c.CertDNSNames, CertNotAfter: orNull(c.CertNotAfter),
		}
		if cj.CertDNSNames == nil {
			cj.CertDNSNames = []string{}
		}
		out.Connections = append(out.Connections, cj)
	}
	for _, ex := range rec.Exchanges {
		e := exchangeJSON{
			AtMS: ms(ex.Start.Sub(rec.Exchanges[0].Start)), Method: ex.Method, URL: ex.URL, Hop: ex.Hop,
			RPCMethod: orNull(ex.RPCMethod), RPCID: orNull(ex.RPCID), Conn: orNull(ex.Conn),
			Status: orNull(ex.Status), DurationMS: ms(ex.Duration), Bytes: ex.Bytes,
			Headers: map[string]string{}, MCPSessionID: ex.Header.Get("Mcp-Session-Id") != "",
			SSEEvents: []sseEventJSON{},
			NotSent:   orNull(ex.Blocked), ErrKind: orNull(ex.ErrKind.String()),
		}
		for _, k := range shownHeaders {
			if v := ex.Header.Values(k); len(v) > 0 {
				e.Headers[k] = strings.Join(v, ", ")
			}
		}
		if ex.Status >= 400 {
			b := ex.BodyHead[:min(len(ex.BodyHead), errorBodyBytes)]
			e.ErrorBody = orNull(strings.ToValidUTF8(string(b), "\ufffd"))
		}
		for _, ev := range ex.Events() {
			e.SSEEvents = append(e.SSEEvents, sseEventJSON{Event: ev.Event, Data: ev.Data})
		}
		if ex.Blocked == "" && ex.ErrKind != check.ErrNone {
			e.Error = orNull(cmp.Or(ex.Detail, ex.Err))
		}
		out.Transcript = append(out.Transcript, e)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeText prints the outcome, its reason, what was learned and the
// transcript.
func writeText(w io.Writer, res data.Result, rec check.Record) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, check.EscapeControl(v))
		}
	}
	line("outcome", string(res.Status))
	line("label", res.Status.Label())
	line("reason", res.Detail)
	line("url", res.URL)
	if res.HTTPStatus != 0 {
		line("http status", fmt.Sprint(res.HTTPStatus))
	}
	line("protocol", protocolText(res))
	line("server", strings.TrimSpace(res.ServerName+" "+res.ServerVersion))
	if res.Status == data.Working {
		line("tools", fmt.Sprintf("%d: %s", res.ToolCount, strings.Join(res.Tools, ", ")))
		if n := len(res.ToolProblems); n > 0 {
			line("tool problems", data.Plural(n, "problem")+" that clients reject or mishandle (advice: still working)")
			for _, p := range res.ToolProblems {
				if p.Tool == "" { // the lint's budget: no one tool
					line("  "+p.Rule, p.Message)
					continue
				}
				line("  "+p.Rule, p.Tool+": "+p.Message)
			}
		}
	}
	if !res.RetryAfter.IsZero() {
		line("retry after", res.RetryAfter.Format(time.RFC3339))
	}
	line("took", fmt.Sprintf("%s, %s, %s, %s read", res.Duration.Round(time.Millisecond),
		data.Plural(res.Requests, "request"), data.Plural(res.Conns, "connection"), data.Plural(int(res.BytesRead), "byte")))
	line("user agent", data.UserAgent())
	cert, timings := factsText(res, res.Finished)
	line("certificate", cert)
	line("timings", timings)
	for i, c := range rec.ConnInfos {
		line(fmt.Sprintf("connection %d", i+1), connectionText(c))
	}
	if body := lastErrorBody(rec); body != "" {
		line("error body", body)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "transcript:"); err != nil {
		return err
	}
	return check.WriteTranscript(w, rec)
}

// connectionText describes a connection on one line: the address dialled,
// the TLS version and protocol, the certificate's subject and expiry.
func connectionText(c check.ConnInfo) string {
	parts := []string{c.RemoteAddr}
	if c.TLSVersion != "" {
		parts = append(parts, strings.TrimSpace(c.TLSVersion+" "+c.ALPN))
	}
	if c.CertSubject != "" {
		parts = append(parts, fmt.Sprintf("certificate %s, expires %s", c.CertSubject, c.CertNotAfter.Format(time.RFC3339)))
	}
	return strings.Join(parts, ", ")
}

// textErrorBody is how much of an error answer the text form shows.
const textErrorBody = 200

// lastErrorBody returns the start of the last answer of status 400 and
// above, "" if none had a body.
func lastErrorBody(rec check.Record) string {
	for i := len(rec.Exchanges) - 1; i >= 0; i-- {
		if ex := rec.Exchanges[i]; ex.Status >= 400 {
			b := ex.BodyHead
			if len(b) > textErrorBody {
				return strings.ToValidUTF8(string(b[:textErrorBody]), "") + "…"
			}
			return string(b)
		}
	}
	return ""
}
