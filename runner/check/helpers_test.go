package check

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// listenLoopback8443 listens on 127.a.b.c:8443 for a random a.b.c, retrying
// another address when one is in use (packages' tests run in parallel). The
// listener is closed when the test ends.
func listenLoopback8443(tb testing.TB) net.Listener {
	tb.Helper()
	var lastErr error
	for range 100 {
		a := randomLoopback()
		ln, err := net.Listen("tcp4", netip.AddrPortFrom(a, 8443).String())
		if err == nil {
			tb.Cleanup(func() { ln.Close() })
			return ln
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	tb.Fatalf("listen on a loopback :8443: %v", lastErr)
	return nil
}

// randomLoopback returns a random 127.a.b.c with b and c in 1..254.
func randomLoopback() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(mrand.IntN(256)), byte(1 + mrand.IntN(254)), byte(1 + mrand.IntN(254))})
}

// unusedLoopback8443 returns a loopback address:8443 nobody listens on (it
// was free a moment ago), for "connection refused" cases.
func unusedLoopback8443(tb testing.TB) netip.AddrPort {
	tb.Helper()
	ln := listenLoopback8443(tb)
	ap := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return ap
}

// testCA is a throw-away certificate authority for lab TLS servers; File is
// its PEM certificate, for Lab.CAFile.
type testCA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	File string
}

// newTestCA makes a CA valid from an hour ago for a day and writes its
// certificate to a temporary PEM file.
func newTestCA(tb testing.TB) *testCA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("generate CA key: %v", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "prober test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatalf("create CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("parse CA certificate: %v", err)
	}
	file := filepath.Join(tb.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatalf("write CA file: %v", err)
	}
	return &testCA{Cert: cert, Key: key, File: file}
}

// leaf issues a server certificate for names, valid from notBefore to
// notAfter.
func (ca *testCA) leaf(tb testing.TB, notBefore, notAfter time.Time, names ...string) tls.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("generate leaf key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(mrand.Int64()),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		tb.Fatalf("create leaf certificate: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// labServerConfig configures startLabServer; the zero value is a server for
// "mcp.test" with a fresh CA and a valid certificate, HTTP/1.1 only.
type labServerConfig struct {
	Host  string                          // fake host name the lab resolves to the listener; "" means "mcp.test"
	CA    *testCA                         // nil means a fresh newTestCA
	Cert  *tls.Certificate                // nil means a leaf of CA for Host, valid now
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
	CA   *testCA
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
		cfg.CA = newTestCA(tb)
	}
	if cfg.Cert == nil {
		c := cfg.CA.leaf(tb, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), cfg.Host)
		cfg.Cert = &c
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = listenLoopback8443(tb)
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
