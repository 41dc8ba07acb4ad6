package check

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// factsServer is a go-sdk server that counts, at the server, what a check
// cost it: connections accepted, TLS handshakes, HTTP requests. Each phase
// is slowed by a known delay (the handshake, each answer), so the check's
// timings can be held to them.
type factsServer struct {
	*labServer
	conns      *countingListener
	handshakes atomic.Int64
	requests   atomic.Int64
	notAfter   time.Time
}

const (
	handshakeDelay = 20 * time.Millisecond // before the server's side of each TLS handshake
	answerDelay    = 30 * time.Millisecond // before each answer
	lookupDelay    = 15 * time.Millisecond // the resolver's, per lookup
	connectDelay   = 10 * time.Millisecond // the dialer's, per connect
)

func startFactsServer(tb testing.TB, notBefore, notAfter time.Time) *factsServer {
	tb.Helper()
	s := &factsServer{conns: &countingListener{}, notAfter: notAfter.Truncate(time.Second)}
	ca := testutil.MustCA(tb)
	cert := ca.MustLeaf(tb, notBefore, s.notAfter, "mcp.test", "alt.mcp.test")
	h := streamableHandler(sdkServer(nil, "a", "b"), true, false)
	s.labServer = startLabServer(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		time.Sleep(answerDelay)
		h.ServeHTTP(w, r)
	}), labServerConfig{CA: ca, Cert: &cert, Wrap: s.conns.wrap, TLS: func(c *tls.Config) {
		c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			time.Sleep(handshakeDelay)
			return nil, nil
		}
		c.VerifyConnection = func(tls.ConnectionState) error { s.handshakes.Add(1); return nil }
	}})
	return s
}

// checker returns a checker that reaches s through a resolver and a dialer
// of known delays, not the lab's override: the lookup is timed too.
func (s *factsServer) checker(tb testing.TB) *Checker {
	lab := s.Lab
	lab.Resolve = nil
	return newTestChecker(tb, lab, 0, func(c *Config) {
		c.Resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
			time.Sleep(lookupDelay)
			if host != s.Host {
				return notFoundResolver(ctx, host)
			}
			return []netip.Addr{s.Addr.Addr()}, nil
		}
		c.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			time.Sleep(connectDelay)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	})
}

// TestFacts holds the facts a check publishes beyond its outcome (the
// certificate and the timings) to what the server presented and the delays it added, and
// the check to the requests of a plain one: learning them costs the server
// not one connection, handshake or request more.
func TestFacts(t *testing.T) {
	t.Parallel()
	t.Run("S3_certificate_and_timings_cost_not_a_request_more", func(t *testing.T) {
		s := startFactsServer(t, time.Now().Add(-time.Hour), time.Now().Add(20*24*time.Hour))
		start := time.Now()
		res, rec := s.checker(t).Check(context.Background(), Target{ID: "s", URL: s.URL + "/mcp"})
		res.Stamp(data.PlannedCheck{ID: "s", URL: s.URL + "/mcp"}, start, time.Now(), 0) // as run -url does
		if res.Status != data.Working {
			t.Fatalf("concluded %s %q", res.Status, res.Detail)
		}
		s.CloseClientConnections()
		// The server's counts: what any check of a stateless go-sdk server
		// costs it, and what the record says.
		if s.conns.conns.Load() != 1 || s.handshakes.Load() != 1 || s.requests.Load() != int64(res.Requests) ||
			rec.Wire.Conns != 1 || rec.Wire.Handshakes != 1 || rec.Wire.Dials != 1 {
			t.Errorf("server saw %d connections, %d handshakes, %d requests; record %+v, %d requests",
				s.conns.conns.Load(), s.handshakes.Load(), s.requests.Load(), rec.Wire, res.Requests)
		}
		want := data.TLSInfo{Version: "TLS 1.3", NotAfter: s.notAfter.UTC(), Issuer: "CN=prober test CA", Names: []string{"mcp.test", "alt.mcp.test"}}
		if got := res.TLS; got == nil || got.Version != want.Version || !got.NotAfter.Equal(want.NotAfter) || got.Issuer != want.Issuer || !slices.Equal(got.Names, want.Names) {
			t.Errorf("TLS %+v, want %+v", got, want)
		}
		tm := res.Timings
		if tm == nil || tm.DNS == nil || tm.Connect == nil || tm.TLS == nil {
			t.Fatalf("timings %+v: want every phase", tm)
		}
		if *tm.DNS < lookupDelay || *tm.Connect < connectDelay || *tm.TLS < handshakeDelay {
			t.Errorf("dns %v, connect %v, tls %v; the server and dialer added %v, %v, %v", *tm.DNS, *tm.Connect, *tm.TLS, lookupDelay, connectDelay, handshakeDelay)
		}
		if len(tm.FirstByte) != int(s.requests.Load()) {
			t.Errorf("%d first-byte times for %d answers", len(tm.FirstByte), s.requests.Load())
		}
		sum := *tm.DNS + *tm.Connect + *tm.TLS
		for i, d := range tm.FirstByte {
			if d < answerDelay {
				t.Errorf("answer %d: first byte after %v; the server waited %v", i+1, d, answerDelay)
			}
			sum += d
		}
		if sum > res.Duration {
			t.Errorf("phases add up to %v, more than the check's %v", sum, res.Duration)
		}
	})
	t.Run("O_expired_certificate_described_and_failing", func(t *testing.T) {
		s := startFactsServer(t, time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
		res, rec := s.checker(t).Check(context.Background(), Target{ID: "s", URL: s.URL + "/mcp"})
		if res.Status != data.Failing || res.Detail != "TLS: certificate has expired" {
			t.Errorf("concluded %s %q, want failing \"TLS: certificate has expired\"", res.Status, res.Detail)
		}
		s.CloseClientConnections()
		if s.conns.conns.Load() != 1 || s.requests.Load() != 0 || rec.Wire.Dials != 1 {
			t.Errorf("server saw %d connections, %d requests; record %+v", s.conns.conns.Load(), s.requests.Load(), rec.Wire)
		}
		if res.TLS == nil || !res.TLS.NotAfter.Equal(s.notAfter) || res.TLS.Version != "TLS 1.3" {
			t.Errorf("TLS %+v: want the expired certificate's expiry %v", res.TLS, s.notAfter)
		}
		if tm := res.Timings; tm == nil || tm.TLS == nil || len(tm.FirstByte) != 0 {
			t.Errorf("timings %+v: want the failed handshake's and no answer", tm)
		}
	})
	t.Run("N6_no_connection_no_facts", func(t *testing.T) {
		c := newTestChecker(t, Lab{}, 0)
		res, _ := c.Check(context.Background(), Target{ID: "s", URL: "https://10.0.0.1/mcp"})
		if res.Status != data.NotCheckable || res.TLS != nil || res.Timings != nil {
			t.Errorf("concluded %s %q, TLS %+v, timings %+v; want not_checkable and no facts", res.Status, res.Detail, res.TLS, res.Timings)
		}
	})
}
