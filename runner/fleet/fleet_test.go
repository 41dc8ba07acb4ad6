package fleet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/internal/testutil"
)

// testSpecs is a fleet with one server of every kind, two of them sharing a
// host.
func testSpecs() []Spec {
	return []Spec{
		{ID: "modern", Host: "modern.fleet.test", Kind: Modern, Tools: []string{"search", "fetch"},
			Title: "Modern", Description: "A modern server.", Website: "https://modern.fleet.test/about"},
		{ID: "streamable", Host: "streamable.fleet.test", Kind: Streamable, Tools: []string{"create_issue"}},
		{ID: "sse", Host: "sse.fleet.test", Path: "/sse", Kind: LegacySSE, Tools: []string{"weather"}},
		{ID: "key", Host: "shared.fleet.test", Path: "/key/mcp", Kind: NeedsKey},
		{ID: "busy", Host: "shared.fleet.test", Path: "/busy/mcp", Kind: RateLimited},
		{ID: "broken", Host: "broken.fleet.test", Kind: Broken},
		{ID: "slow", Host: "slow.fleet.test", Kind: Slow},
	}
}

// MustStart starts a fleet of specs in a temporary directory, closed when
// the test ends.
func MustStart(tb testing.TB, specs []Spec) *Fleet {
	tb.Helper()
	f, err := Start(Config{Servers: specs, Dir: tb.TempDir(), RetryAfter: 90 * time.Second})
	if err != nil {
		tb.Fatalf("start fleet: %v", err)
	}
	tb.Cleanup(func() {
		if err := f.Close(); err != nil {
			tb.Errorf("close fleet: %v", err)
		}
	})
	return f
}

// client returns an HTTP client that trusts only the fleet's CA and dials
// each fleet host at its loopback address; any other name fails, so
// nothing leaves 127.0.0.0/8.
func client(tb testing.TB, f *Fleet, timeout time.Duration) *http.Client {
	tb.Helper()
	resolve := f.Resolve()
	var d net.Dialer
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:             nil,
			TLSClientConfig:   &tls.Config{RootCAs: f.RootCAs()},
			ForceAttemptHTTP2: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				ip, ok := resolve[addr]
				if !ok {
					return nil, errors.New("test: not a fleet host: " + addr)
				}
				if !netip.MustParseAddr(ip).IsLoopback() {
					tb.Fatalf("fleet host %s resolves outside loopback: %s", addr, ip)
				}
				_, port, _ := net.SplitHostPort(addr)
				return d.DialContext(ctx, "tcp4", net.JoinHostPort(ip, port))
			},
		},
	}
}

func mustServer(tb testing.TB, f *Fleet, id string) Server {
	tb.Helper()
	s, ok := f.Server(id)
	if !ok {
		tb.Fatalf("no server %q in the fleet", id)
	}
	return s
}

// TestMCPKinds connects the go-sdk client to each go-sdk kind and lists its
// tools: the fleet's servers are real MCP servers of the era they claim
// (rule N4's three flows).
func TestMCPKinds(t *testing.T) {
	t.Parallel()
	f := MustStart(t, testSpecs())
	hc := client(t, f, 10*time.Second)
	tests := []struct {
		id        string
		transport func(url string) mcp.Transport
		version   string // asked for; "" means the SDK's latest
		wantProto string
		wantFirst string // first request the server receives
	}{
		{
			id: "modern", wantProto: "2026-07-28", wantFirst: "POST server/discover",
			transport: func(u string) mcp.Transport {
				return &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
			},
		},
		{
			id: "streamable", wantProto: "2025-11-25", wantFirst: "POST server/discover",
			transport: func(u string) mcp.Transport {
				return &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
			},
		},
		{
			id: "sse", version: "2024-11-05", wantProto: "2024-11-05", wantFirst: "GET",
			transport: func(u string) mcp.Transport { return &mcp.SSEClientTransport{Endpoint: u, HTTPClient: hc} },
		},
	}
	for _, tc := range tests {
		t.Run("N4_"+tc.id, func(t *testing.T) {
			s := mustServer(t, f, tc.id)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "fleet-test", Version: "0"}, nil)
			cs, err := c.Connect(ctx, tc.transport(s.URL), &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect to %s: %v", s.URL, err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.wantProto {
				t.Errorf("protocol %q, want %q", got, tc.wantProto)
			}
			if got := cs.InitializeResult().ServerInfo.Name; got != tc.id {
				t.Errorf("server name %q, want %q", got, tc.id)
			}
			if si := cs.InitializeResult().ServerInfo; si.Title != s.Title || si.Description != s.Description || si.WebsiteURL != s.Website {
				t.Errorf("server says of itself %q, %q, %q; want its spec's %q, %q, %q", si.Title, si.Description, si.WebsiteURL, s.Title, s.Description, s.Website)
			}
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if want := slices.Sorted(slices.Values(s.Tools)); !slices.Equal(names, want) {
				t.Errorf("tools %q, want %q (the go-sdk lists them by name)", names, want)
			}
			if tc.wantProto != s.Kind.Protocol() {
				t.Errorf("Kind.Protocol() = %q, want %q", s.Kind.Protocol(), tc.wantProto)
			}
			got := f.Received(tc.id)
			if len(got) == 0 || got[0] != tc.wantFirst || !slices.Contains(got, "POST tools/list") {
				t.Errorf("received %q, want %q first and a tools/list", got, tc.wantFirst)
			}
		})
	}
}

// TestRefusingKinds sends one plain POST initialize to each kind that
// answers before any MCP server would, and checks the answer the check
// classifies (table O: needs_key, refused, failing).
func TestRefusingKinds(t *testing.T) {
	t.Parallel()
	f := MustStart(t, testSpecs())
	hc := client(t, f, 5*time.Second)
	tests := []struct {
		name, id   string
		wantStatus int
		wantHeader map[string]string // header -> substring
	}{
		{name: "O_needs_key_401_bearer_resource_metadata", id: "key", wantStatus: 401, wantHeader: map[string]string{
			"WWW-Authenticate": `Bearer resource_metadata="https://shared.fleet.test:8443/.well-known/oauth-protected-resource/key/mcp"`,
		}},
		{name: "O_refused_429_retry_after", id: "busy", wantStatus: 429, wantHeader: map[string]string{"Retry-After": "90"}},
		{name: "O_failing_500", id: "broken", wantStatus: 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustServer(t, f, tc.id)
			resp, err := hc.Post(s.URL, "application/json", strings.NewReader(initialize))
			if err != nil {
				t.Fatalf("POST %s: %v", s.URL, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			for h, want := range tc.wantHeader {
				if got := resp.Header.Get(h); !strings.Contains(got, want) {
					t.Errorf("%s: %q, want it to hold %q", h, got, want)
				}
			}
			if got := f.Received(tc.id); !slices.Equal(got, []string{"POST initialize"}) {
				t.Errorf("received %q, want one POST initialize", got)
			}
		})
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// TestNeedsKeyMetadata follows the challenge of a NeedsKey server to its
// OAuth protected-resource metadata (RFC 9728), which names the server.
func TestNeedsKeyMetadata(t *testing.T) {
	t.Parallel()
	f := MustStart(t, testSpecs())
	hc := client(t, f, 5*time.Second)
	s := mustServer(t, f, "key")
	resp, err := hc.Get("https://shared.fleet.test:8443/.well-known/oauth-protected-resource/key/mcp")
	if err != nil {
		t.Fatalf("GET metadata: %v", err)
	}
	defer resp.Body.Close()
	var meta struct {
		Resource string `json:"resource"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil || resp.StatusCode != 200 {
		t.Fatalf("metadata: status %d, decode %v", resp.StatusCode, err)
	}
	if meta.Resource != s.URL {
		t.Errorf("resource %q, want %q", meta.Resource, s.URL)
	}
}

// TestSlowNeverAnswers: a Slow server holds a request until the client
// gives up (the check's 45 s deadline, rule N10, shortened here), and Close
// drops what it still holds without waiting for it.
func TestSlowNeverAnswers(t *testing.T) {
	t.Parallel()
	f, err := Start(Config{Servers: testSpecs(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := mustServer(t, f, "slow")

	start := time.Now()
	_, err = client(t, f, 300*time.Millisecond).Post(s.URL, "application/json", strings.NewReader(initialize))
	if err == nil {
		t.Fatal("a slow server answered")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before the client's deadline", d)
	}

	before := len(f.Received("slow"))
	held := make(chan error, 1)
	go func() {
		_, err := client(t, f, 0).Post(s.URL, "application/json", strings.NewReader(initialize))
		held <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); len(f.Received("slow")) == before; {
		if time.Now().After(deadline) {
			t.Fatal("the request to hold never reached the slow server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case err := <-held:
		if err == nil {
			t.Error("a slow server answered at close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("close left a held request hanging")
	}
	if err := f.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestAddresses: each host has its own 127.0.0.N:8443 (servers sharing a
// host share it), two fleets at once get different addresses (an address
// in use is skipped), and the CA file is written.
func TestAddresses(t *testing.T) {
	t.Parallel()
	a := MustStart(t, testSpecs())
	b := MustStart(t, testSpecs())
	for _, f := range []*Fleet{a, b} {
		res := f.Resolve()
		if len(res) != 6 {
			t.Errorf("%d hosts resolved, want 6: %v", len(res), res)
		}
		seen := map[string]bool{}
		for host, ip := range res {
			addr := netip.MustParseAddr(ip)
			if !addr.IsLoopback() || !strings.HasSuffix(host, ":8443") {
				t.Errorf("%s -> %s: want a loopback address and port 8443", host, ip)
			}
			seen[ip] = true
		}
		if len(seen) != len(res) && !seen["127.0.0.1"] {
			t.Errorf("hosts share an address: %v", res)
		}
		key, busy := mustServer(t, f, "key"), mustServer(t, f, "busy")
		if key.Addr != busy.Addr || key.Addr.Port() != Port {
			t.Errorf("servers on one host at %v and %v, want one address on port %d", key.Addr, busy.Addr, Port)
		}
		if _, err := tls.Dial("tcp4", key.Addr.String(), &tls.Config{RootCAs: f.RootCAs(), ServerName: "other.test"}); err == nil {
			t.Error("the certificate is valid for a name outside the fleet")
		}
	}
	for host, ip := range a.Resolve() {
		if b.Resolve()[host] == ip && ip != "127.0.0.1" {
			t.Errorf("both fleets listen for %s on %s", host, ip)
		}
	}
	if !strings.HasSuffix(a.CAFile(), CAFileName) {
		t.Errorf("CA file %q", a.CAFile())
	}
}

// TestConfigValidate: each bad fleet is refused with a clear error and
// nothing starts.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := Spec{ID: "a", Host: "a.test", Kind: Modern}
	tests := []struct {
		name  string
		specs []Spec
		want  string
	}{
		{"no_servers", nil, "no servers"},
		{"no_id", []Spec{{Host: "a.test", Kind: Modern}}, "server 1 has no id"},
		{"duplicate_id", []Spec{ok, ok}, `"a" listed twice`},
		{"upper_case_host", []Spec{{ID: "a", Host: "A.test", Kind: Modern}}, "not a lowercase hostname"},
		{"ip_host", []Spec{{ID: "a", Host: "127.0.0.5", Kind: Modern}}, "not a lowercase hostname"},
		{"same_address", []Spec{ok, {ID: "b", Host: "a.test", Kind: Broken}}, "already taken"},
		{"bad_path", []Spec{{ID: "a", Host: "a.test", Path: "mcp", Kind: Modern}}, "does not start with /"},
		{"unknown_kind", []Spec{{ID: "a", Host: "a.test", Kind: "teapot"}}, `unknown kind "teapot"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(Config{Servers: tc.specs, Dir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestOnlyLocalhost: on a system with no loopback address but 127.0.0.1
// (macOS without aliases), every host shares one listener and each server
// is still reached by its name, with the right behaviour.
func TestOnlyLocalhost(t *testing.T) {
	t.Parallel()
	var shared netip.AddrPort
	listen := func(network, addr string) (net.Listener, error) {
		if addr != "127.0.0.1:8443" {
			return nil, &net.OpError{Op: "listen", Net: network, Err: syscall.EADDRNOTAVAIL}
		}
		// Stands in for 127.0.0.1:8443, which another test may hold: any
		// free loopback address on port 8443 will do.
		ln, err := testutil.Listen8443()
		if err == nil {
			shared = netip.MustParseAddrPort(ln.Addr().String())
		}
		return ln, err
	}
	f, err := Start(Config{Servers: testSpecs(), Dir: t.TempDir(), Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for host, addr := range f.Resolve() {
		if addr != shared.Addr().String() {
			t.Errorf("%s listens on %s, want the one shared address %s", host, addr, shared.Addr())
		}
	}
	hc := client(t, f, 5*time.Second)
	for id, want := range map[string]int{"key": 401, "busy": 429, "broken": 500} {
		resp, err := hc.Post(mustServer(t, f, id).URL, "application/json", strings.NewReader(initialize))
		if err != nil {
			t.Fatalf("POST to %s: %v", id, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s answered %d, want %d: hosts sharing a listener are not told apart", id, resp.StatusCode, want)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fleet-test", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: mustServer(t, f, "modern").URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect to modern: %v", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Name; got != "modern" {
		t.Errorf("reached %q, want modern", got)
	}
}
