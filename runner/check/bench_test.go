package check

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// BenchmarkCheck measures one check per flow against a local go-sdk server
// over TLS: time and allocations per check, and the HTTP requests and TCP
// connections each check makes (goal: one connection per check, reused by
// all its requests). "known" flows go straight to the learned era; "unknown"
// ones pay for the fallback. The h1 variants show what a server without
// HTTP/2 costs the legacy SSE flow (its GET holds one connection). The
// "hostile" flows answer tools/list with the worst answers of testdata/worst:
// what the tool lint costs beside a plain check, in
// CPU time per check (cpu-ms/check, the process's own, server included).
func BenchmarkCheck(b *testing.B) {
	only := func(v string) *mcp.Server {
		return sdkServer(&mcp.ServerOptions{SupportedProtocolVersions: []string{v}}, "alpha", "beta")
	}
	flows := []struct {
		name      string
		handler   func() http.Handler
		opts      serverOpts
		protocol  string
		transport string
		want      data.Outcome // "" means working
	}{
		{name: "2026-07-28_stateless_known", handler: func() http.Handler { return streamableHandler(sdkServer(nil, "alpha", "beta"), true, false) }, protocol: "2026-07-28", transport: data.TransportStreamable},
		{name: "2026-07-28_stateless_unknown", handler: func() http.Handler { return streamableHandler(sdkServer(nil, "alpha", "beta"), true, false) }},
		{name: "2025-11-25_known", handler: func() http.Handler { return streamableHandler(only("2025-11-25"), false, false) }, protocol: "2025-11-25", transport: data.TransportStreamable},
		{name: "2025-11-25_unknown", handler: func() http.Handler { return streamableHandler(only("2025-11-25"), false, false) }},
		{name: "2025-06-18_known_json", handler: func() http.Handler { return streamableHandler(only("2025-06-18"), false, true) }, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "2024-11-05_sse_known", handler: func() http.Handler { return sseHandler(sdkServer(nil, "alpha", "beta")) }, opts: serverOpts{legacySSE: true}, protocol: "2024-11-05", transport: data.TransportSSE},
		{name: "2024-11-05_sse_unknown", handler: func() http.Handler { return sseHandler(sdkServer(nil, "alpha", "beta")) }, opts: serverOpts{legacySSE: true}},
		{name: "2024-11-05_sse_known_h1", handler: func() http.Handler { return sseHandler(sdkServer(nil, "alpha", "beta")) }, opts: serverOpts{legacySSE: true, http1: true}, protocol: "2024-11-05", transport: data.TransportSSE},
		{name: "2025-11-25_known_h1", handler: func() http.Handler { return streamableHandler(only("2025-11-25"), false, false) }, opts: serverOpts{http1: true}, protocol: "2025-11-25", transport: data.TransportStreamable},
		{name: "hostile_plain", handler: func() http.Handler { return legacyMux("2025-06-18", "alpha", "beta") }, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "hostile_regex_39k", handler: func() http.Handler { return worstMux(b, worstRegex) }, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "hostile_regex_39k_x3", handler: func() http.Handler { return worstMux(b, worstRegex3) }, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "hostile_patternproperties_27k", handler: func() http.Handler { return worstMux(b, worstPatProps) }, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "hostile_deep_1000", handler: func() http.Handler { return worstMux(b, worstDeep) }, protocol: "2025-06-18", transport: data.TransportStreamable, want: data.Failing},
		{name: "hostile_refs_8000", handler: func() http.Handler { return worstMux(b, worstRefs) }, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "hostile_objects_11x2000", handler: func() http.Handler { return worstMux(b, worstObjects) }, protocol: "2025-06-18", transport: data.TransportStreamable},
		{name: "hostile_130k_tools_10_pages", handler: func() http.Handler { return worstMux(b, worstManyTools) }, protocol: "2025-06-18", transport: data.TransportStreamable},
	}
	for _, fl := range flows {
		b.Run(fl.name, func(b *testing.B) {
			srv := startFlowServer(b, fl.handler(), fl.opts)
			c := newTestChecker(b, srv.Lab, 0)
			tg := srv.target()
			tg.Protocol, tg.Transport = fl.protocol, fl.transport
			want := cmp.Or(fl.want, data.Working)
			var requests, conns int
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				res, rec := c.Check(context.Background(), tg)
				if res.Status != want {
					b.Fatalf("concluded %s %q; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
				}
				requests += res.Requests
				conns += res.Conns
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/check")
			b.ReportMetric(float64(requests)/float64(b.N), "requests/check")
			b.ReportMetric(float64(conns)/float64(b.N), "conns/check")
		})
	}
}

// cpuTime is the CPU time the process used so far, user and system.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBaselineSDK is the baseline of BenchmarkCheck, measured in the
// same run: the go-sdk client left to its defaults (as a naive prober would
// use it, no guard) against the same servers, a fresh http.Transport per
// check, Connect, every tools page, Close. It sends what the checks page
// forbids (the standalone GET, DELETE), so its servers have no recorder;
// they count requests and connections themselves.
func BenchmarkBaselineSDK(b *testing.B) {
	flows := []struct {
		name    string
		handler func() http.Handler
		version string
		sse     bool
	}{
		{name: "2026-07-28_stateless_known", handler: func() http.Handler { return streamableHandler(sdkServer(nil, "alpha", "beta"), true, false) }, version: "2026-07-28"},
		{name: "2025-11-25_known", handler: func() http.Handler {
			return streamableHandler(sdkServer(&mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}}, "alpha", "beta"), false, false)
		}, version: "2025-11-25"},
		{name: "2024-11-05_sse_known", handler: func() http.Handler { return sseHandler(sdkServer(nil, "alpha", "beta")) }, version: "2024-11-05", sse: true},
	}
	for _, fl := range flows {
		b.Run(fl.name, func(b *testing.B) {
			var requests, conns atomic.Int64
			h := fl.handler()
			counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				h.ServeHTTP(w, r)
			})
			srv := startLabServer(b, counted, labServerConfig{HTTP2: true})
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			pem, err := os.ReadFile(srv.CA.File)
			if err != nil {
				b.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			addr := srv.Addr.String()
			url := srv.URL + "/mcp"
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var d net.Dialer
				tr := &http.Transport{
					TLSClientConfig:   &tls.Config{RootCAs: pool},
					ForceAttemptHTTP2: true,
					DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
						return d.DialContext(ctx, network, addr)
					},
				}
				hc := &http.Client{Transport: tr}
				var t mcp.Transport = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}
				if fl.sse {
					t = &mcp.SSEClientTransport{Endpoint: url, HTTPClient: hc}
				}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "baseline", Version: "0"}, nil).
					Connect(context.Background(), t, &mcp.ClientSessionOptions{ProtocolVersion: fl.version})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for _, err := range cs.Tools(context.Background(), nil) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				cs.Close()
				tr.CloseIdleConnections()
				if n != 2 {
					b.Fatalf("%d tools", n)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/check")
			b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/check")
		})
	}
}
