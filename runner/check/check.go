package check

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"time"

	"plug.directory/prober/data"
)

// Config configures a Checker. Its zero value means the production defaults:
// the build's User-Agent, any source address, no lab setting, 45 s per check.
type Config struct {
	UserAgent  string           // exact User-Agent (rule N1); "" means data.UserAgent()
	SourceAddr netip.Addr       // address checks leave from (rule N11); zero means any
	Lab        Lab              // lab setting, off by default
	Timeout    time.Duration    // whole check (rule N10); 0 means data.CheckTimeout
	Now        func() time.Time // nil means time.Now

	// Resolver and DialContext are handed to the guard; nil means the
	// system's (tests inject their own so nothing leaves 127.0.0.0/8).
	Resolver    func(ctx context.Context, host string) ([]netip.Addr, error)
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	Logger *slog.Logger // nil means no logs
}

// Validate reports a Timeout below zero or above the page's 45 s (rule
// N10), or a bad lab setting.
func (c Config) Validate() error {
	if c.Timeout < 0 || c.Timeout > data.CheckTimeout {
		return fmt.Errorf("validate check config: timeout %v not within 0 and %v", c.Timeout, data.CheckTimeout)
	}
	if err := c.Lab.Validate(); err != nil {
		return fmt.Errorf("validate check config: %w", err)
	}
	return nil
}

// Target is one server to check, with what earlier checks learned of it.
type Target struct {
	ID        string
	URL       string
	Protocol  string // protocol version learned before (data.State.Protocol), "" if unknown
	Transport string // data.TransportStreamable, data.TransportSSE or "" if unknown
}

// Protocol versions the flows ask for (rule N4).
const (
	protocolModern = data.DiscoverProtocolVersion // first version with server/discover
	protocolLegacy = "2025-11-25"                 // newest version of the initialize handshake
	protocolSSE    = "2024-11-05"                 // the legacy HTTP+SSE transport's version
)

// The modern JSON-RPC error codes (header mismatch -32020, missing client
// capabilities -32021, unsupported protocol version -32022): a 400 carrying
// one comes from a modern server, not a legacy HTTP+SSE one.
const (
	modernCodeFirst = -32022
	modernCodeLast  = -32020
)

const (
	clientName   = "plug.directory-prober" // clientInfo.name the servers see
	maxToolPages = 10                      // tools/list pages read at most per check
)

// Checker runs checks. It is safe for concurrent use: every check gets a
// guard, connections and SDK client of its own.
type Checker struct {
	cfg    Config
	logger *slog.Logger
}

// New returns a Checker for cfg. It fails when cfg does not validate or the
// lab CA file cannot be read.
func New(cfg Config) (*Checker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = data.UserAgent()
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = data.CheckTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Checker{cfg: cfg, logger: logger}
	g, err := c.newGuard() // fail now on a bad CA file rather than in every check
	if err != nil {
		return nil, fmt.Errorf("new checker: %w", err)
	}
	g.Close()
	return c, nil
}

func (c *Checker) newGuard() (*Guard, error) {
	return NewGuard(GuardConfig{
		UserAgent:   c.cfg.UserAgent,
		SourceAddr:  c.cfg.SourceAddr,
		Lab:         c.cfg.Lab,
		Resolver:    c.cfg.Resolver,
		DialContext: c.cfg.DialContext,
		Now:         c.cfg.Now,
		Timeout:     c.cfg.Timeout,
	})
}

// Check runs one check of t and returns what it found and the guard's
// record of every exchange (the transcript); who was checked, why and when
// are its caller's to set (data.Result.Stamp). It never fails: a server
// that cannot be checked is a result too. The whole check ends within the
// configured timeout (rule N10), by closing its connections.
func (c *Checker) Check(ctx context.Context, t Target) (data.Result, Record) {
	var res data.Result
	var rec Record
	v := c.run(ctx, t, &res, &rec)
	res.Status, res.Detail = v.status, v.detail
	if res.Status == data.NeedsKey {
		res.KeyInfo = keyInfo(rec)
	}
	res.ProberFault = res.ProberFault || rec.proberFault()
	fillCounts(&res, rec, c.cfg.Now)
	c.logger.Debug("check done", "id", t.ID, "url", t.URL, "status", res.Status, "detail", res.Detail)
	return res, rec
}

// run checks the target's address, then runs the flows under the check's
// deadline and classifies what they found.
func (c *Checker) run(ctx context.Context, t Target, res *data.Result, rec *Record) verdict {
	if t.URL == "" {
		return verdict{data.NotCheckable, data.DetailNoAddress}
	}
	u, err := url.Parse(t.URL)
	if err != nil {
		return verdict{data.NotCheckable, "address does not parse"}
	}
	if err := CheckTarget(u, c.cfg.Lab); err != nil {
		var te *TargetError
		if errors.As(err, &te) {
			return verdict{data.NotCheckable, te.Detail}
		}
		return verdict{data.NotCheckable, "address not allowed"}
	}
	g, err := c.newGuard()
	if err != nil {
		// New built a guard from the same config, so this is the prober's
		// fault, not the server's: it must not count against it.
		c.logger.Error("new guard", "err", err)
		res.ProberFault = true
		return verdict{data.NotCheckable, "prober error: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	stop := context.AfterFunc(ctx, g.Close) // rule N10: give up by closing the connections
	f := &flow{
		url:    u.String(),
		guard:  g,
		logger: c.logger,
		now:    c.cfg.Now,
	}
	f.run(ctx, t)
	deadline := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancelled := ctx.Err() != nil && !deadline
	cancel()
	stop()
	g.Close()
	*rec = g.Record()
	f.fill(res)
	res.Support = supportOf(*rec, f.snapshot())
	return classify(*rec, f.snapshot(), classifyContext{
		deadline:  deadline,
		cancelled: cancelled,
		timeout:   c.cfg.Timeout,
	})
}
