package main

import (
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

// runOneOff checks one server now and prints the result. It returns an
// exitError of status 1 when the server did not answer, 2 on bad usage.
func runOneOff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg OneOffConfig
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
		fmt.Fprintln(fs.Output(), "usage: run -url https://host/mcp [-json] [-source ADDR] [-lab [-resolve host:port:addr]... [-ca-file FILE]]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: exitUsage} // the flag package printed why
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := cfg.Validate(); err != nil {
		return usageError(err)
	}
	checker, err := check.New(check.Config{SourceAddr: cfg.Source, Lab: cfg.Lab, Timeout: cfg.Timeout})
	if err != nil {
		return usageError(err)
	}
	res, rec := checker.Check(ctx, check.Target{ID: "one-off", URL: cfg.URL, Protocol: cfg.Protocol, Transport: cfg.Transport})
	if cfg.JSON {
		err = writeJSON(stdout, res, rec)
	} else {
		err = writeText(stdout, res, rec)
	}
	if err != nil {
		return fmt.Errorf("print result: %w", err)
	}
	if !res.Status.Answered() {
		return &exitError{code: exitNotAnswered}
	}
	return nil
}

// oneOffJSON is the -json output: the result, with the reason under
// "reason" (data.Result's "reason" is why a check was planned), and the
// transcript.
type oneOffJSON struct {
	Status        data.Outcome   `json:"status"`
	Label         string         `json:"label"`
	Reason        string         `json:"reason"`
	URL           string         `json:"url"`
	Host          string         `json:"host"`
	HTTPStatus    int            `json:"http_status"`
	Protocol      string         `json:"protocol"`
	Transport     string         `json:"transport"`
	ServerName    string         `json:"server_name"`
	ServerVersion string         `json:"server_version"`
	ToolCount     int            `json:"tool_count"`
	Tools         []string       `json:"tools"`
	Started       time.Time      `json:"started"`
	Finished      time.Time      `json:"finished"`
	DurationMS    float64        `json:"duration_ms"`
	Requests      int            `json:"requests"`
	Conns         int            `json:"conns"`
	BytesRead     int64          `json:"bytes_read"`
	RetryAfter    *time.Time     `json:"retry_after,omitempty"`
	ProberVersion string         `json:"prober_version"`
	UserAgent     string         `json:"user_agent"`
	Transcript    []exchangeJSON `json:"transcript"`
	Result        data.Result    `json:"result"` // the result as the runner stores it
}

// exchangeJSON is one request of the transcript.
type exchangeJSON struct {
	AtMS       float64 `json:"at_ms"` // since the first request
	Method     string  `json:"method"`
	URL        string  `json:"url"`
	RPCMethod  string  `json:"rpc_method,omitempty"`
	Status     int     `json:"status,omitempty"`
	Bytes      int64   `json:"bytes"`
	DurationMS float64 `json:"duration_ms"`
	NotSent    string  `json:"not_sent,omitempty"` // why the guard refused to send it
	Error      string  `json:"error,omitempty"`
	ErrKind    string  `json:"err_kind,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeJSON prints the result and transcript as one JSON object.
func writeJSON(w io.Writer, res data.Result, rec check.Record) error {
	out := oneOffJSON{
		Status: res.Status, Label: res.Status.Label(), Reason: res.Detail,
		URL: res.URL, Host: res.Host, HTTPStatus: res.HTTPStatus,
		Protocol: res.Protocol, Transport: res.Transport,
		ServerName: res.ServerName, ServerVersion: res.ServerVersion,
		ToolCount: res.ToolCount, Tools: res.Tools,
		Started: res.Started, Finished: res.Finished, DurationMS: ms(res.Duration),
		Requests: res.Requests, Conns: res.Conns, BytesRead: res.BytesRead,
		ProberVersion: res.ProberVersion, UserAgent: data.UserAgent(),
		Transcript: []exchangeJSON{}, Result: res,
	}
	if out.Tools == nil {
		out.Tools = []string{}
	}
	if !res.RetryAfter.IsZero() {
		out.RetryAfter = &res.RetryAfter
	}
	for _, ex := range rec.Exchanges {
		e := exchangeJSON{
			AtMS: ms(ex.Start.Sub(rec.Exchanges[0].Start)), Method: ex.Method, URL: ex.URL,
			RPCMethod: ex.RPCMethod, Status: ex.Status, Bytes: ex.Bytes, DurationMS: ms(ex.Duration),
			NotSent: ex.Blocked, ErrKind: ex.ErrKind.String(),
		}
		if ex.Blocked == "" && ex.ErrKind != check.ErrNone {
			e.Error = ex.Detail
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
	if res.Protocol != "" {
		line("protocol", res.Protocol+" over "+res.Transport)
	}
	line("server", strings.TrimSpace(res.ServerName+" "+res.ServerVersion))
	if res.Status == data.Working {
		line("tools", fmt.Sprintf("%d: %s", res.ToolCount, strings.Join(res.Tools, ", ")))
	}
	if !res.RetryAfter.IsZero() {
		line("retry after", res.RetryAfter.Format(time.RFC3339))
	}
	line("took", fmt.Sprintf("%s, %s, %s, %s read", res.Duration.Round(time.Millisecond),
		plural(res.Requests, "request"), plural(res.Conns, "connection"), plural(int(res.BytesRead), "byte")))
	line("user agent", data.UserAgent())
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "transcript:"); err != nil {
		return err
	}
	return check.WriteTranscript(w, rec)
}

// plural formats n things, "1 request" or "3 requests".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
