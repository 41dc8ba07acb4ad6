package check

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"plug.directory/prober/internal/testutil"
)

// unusedLoopback8443 returns a loopback address:8443 nobody listens on (it
// was free a moment ago), for "connection refused" cases.
func unusedLoopback8443(tb testing.TB) netip.AddrPort {
	tb.Helper()
	ln := testutil.ListenLoopback8443(tb)
	ap := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return ap
}

// realWait returns full, or short under -short: a test that waits out a
// real deadline (rule N10) proves the same with a shorter one, and make
// test runs it with the full one.
func realWait(full, short time.Duration) time.Duration {
	if testing.Short() {
		return short
	}
	return full
}

// labServerConfig configures startLabServer; the zero value is a server for
// "mcp.test" with a fresh CA and a valid certificate, HTTP/1.1 only.
type labServerConfig struct {
	Host  string                          // fake host name the lab resolves to the listener; "" means "mcp.test"
	CA    *testutil.CA                    // nil means a fresh testutil.MustCA
	Cert  *tls.Certificate                // nil means a leaf of CA for Host, valid from testutil.ValidFrom to ValidUntil
	HTTP2 bool                            // offer h2
	TLS   func(*tls.Config)               // optional: adjust the server's TLS config before it starts
	Wrap  func(net.Listener) net.Listener // optional: wrap the TCP listener, below TLS
}

// labServer is an httptest TLS server on a random 127.x.y.z:8443, reachable
// in the lab setting as URL (https://Host:8443).
type labServer struct {
	*httptest.Server
	Host string
	Addr netip.AddrPort // the listener's address
	URL  string         // https://Host:8443
	CA   *testutil.CA
	Lab  Lab // Enabled, Resolve Host:8443 -> Addr, CAFile of CA
}

// startLabServer starts h on a loopback :8443 listener with TLS; it is
// closed when the test ends. Handlers that block must watch r.Context().
func startLabServer(tb testing.TB, h http.Handler, cfg labServerConfig) *labServer {
	tb.Helper()
	if cfg.Host == "" {
		cfg.Host = "mcp.test"
	}
	if cfg.CA == nil {
		cfg.CA = testutil.MustCA(tb)
	}
	if cfg.Cert == nil {
		c := cfg.CA.MustLeaf(tb, testutil.ValidFrom, testutil.ValidUntil, cfg.Host) // valid on any clock a test injects
		cfg.Cert = &c
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = testutil.ListenLoopback8443(tb)
	if cfg.Wrap != nil {
		srv.Listener = cfg.Wrap(srv.Listener)
	}
	srv.EnableHTTP2 = cfg.HTTP2
	// Handshakes the guard refuses (bad certificates) are expected: keep
	// the server's log out of the test output.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cfg.Cert}}
	if cfg.TLS != nil {
		cfg.TLS(srv.TLS)
	}
	srv.StartTLS()
	tb.Cleanup(srv.Close)
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String())
	return &labServer{
		Server: srv,
		Host:   cfg.Host,
		Addr:   addr,
		URL:    "https://" + cfg.Host + ":8443",
		CA:     cfg.CA,
		Lab: Lab{
			Enabled: true,
			Resolve: map[string]string{cfg.Host + ":8443": addr.Addr().String()},
			CAFile:  cfg.CA.File,
		},
	}
}

// newTestGuard returns a guard for cfg, closed when the test ends. Without
// an injected Resolver it gets one that fails the test: a test never asks
// the real DNS (names reach test servers through Lab.Resolve).
func newTestGuard(tb testing.TB, cfg GuardConfig) *Guard {
	tb.Helper()
	if cfg.Resolver == nil {
		cfg.Resolver = noResolve(tb)
	}
	g, err := NewGuard(cfg)
	if err != nil {
		tb.Fatalf("NewGuard: %v", err)
	}
	tb.Cleanup(g.Close)
	return g
}

// noDial is a DialContext that fails the test if the guard ever tries to
// connect: for addresses it must refuse before dialling.
func noDial(tb testing.TB) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(_ context.Context, network, addr string) (net.Conn, error) {
		tb.Errorf("dialled %s %s: the guard must refuse before connecting", network, addr)
		return nil, errors.New("test: dial not allowed")
	}
}

// noResolve is a Resolver that fails the test if the guard looks a name up.
func noResolve(tb testing.TB) func(ctx context.Context, host string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		tb.Errorf("looked up %q in DNS: tests reach servers through Lab.Resolve", host)
		return nil, &net.DNSError{Err: "test: no DNS", Name: host, IsNotFound: true}
	}
}

// onlyDial is a DialContext that connects only to the given lab servers and
// fails the test for any other address.
func onlyDial(tb testing.TB, srvs ...*labServer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	allowed := make(map[string]bool, len(srvs))
	for _, s := range srvs {
		allowed[s.Addr.String()] = true
	}
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !allowed[addr] {
			tb.Errorf("dialled %s %s: not a test server", network, addr)
			return nil, errors.New("test: dial not allowed")
		}
		return d.DialContext(ctx, network, addr)
	}
}
