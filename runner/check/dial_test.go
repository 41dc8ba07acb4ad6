package check

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// fixedResolver answers every lookup with addrs, or err.
func fixedResolver(addrs []string, err error) func(context.Context, string) ([]netip.Addr, error) {
	return func(context.Context, string) ([]netip.Addr, error) {
		if err != nil {
			return nil, err
		}
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	}
}

// TestDialRefusesBeforeConnecting proves rules N6 and N7 at the dialer: an
// address that is not allowed is refused before any connection is tried
// (the injected DialContext fails the test if called).
func TestDialRefusesBeforeConnecting(t *testing.T) {
	cases := []struct {
		name     string
		lab      bool
		addr     string   // what the transport asks to dial
		resolves []string // the resolver's answer for a host name
		kind     ErrKind
	}{
		{"N6_private_10", false, "10.0.0.1:443", nil, ErrNoPublicAddr},
		{"N6_private_10_lab", true, "10.0.0.1:8443", nil, ErrNoPublicAddr},
		{"N6_private_192.168", false, "192.168.1.1:443", nil, ErrNoPublicAddr},
		{"N6_private_192.168_lab", true, "192.168.1.1:8443", nil, ErrNoPublicAddr},
		{"N6_private_172.16_lab", true, "172.16.5.4:443", nil, ErrNoPublicAddr},
		{"N6_link_local_metadata", false, "169.254.169.254:443", nil, ErrNoPublicAddr},
		{"N6_cgnat", false, "100.64.0.1:443", nil, ErrNoPublicAddr},
		{"N6_loopback_without_lab", false, "127.0.0.1:8443", nil, ErrNoPublicAddr},
		{"N6_never_IPv6_loopback", false, "[::1]:443", nil, ErrNoPublicAddr},
		{"N6_never_IPv6_loopback_lab", true, "[::1]:8443", nil, ErrNoPublicAddr},
		{"N6_never_IPv6_public", false, "[2001:4860:4860::8888]:443", nil, ErrNoPublicAddr},
		{"N6_never_mapped_private_lab", true, "[::ffff:10.0.0.1]:8443", nil, ErrNoPublicAddr},
		{"N7_public_port_80", false, "8.8.8.8:80", nil, ErrTargetNotAllowed},
		{"N7_public_port_8080", false, "8.8.8.8:8080", nil, ErrTargetNotAllowed},
		{"N7_loopback_port_8080_lab", true, "127.0.0.1:8080", nil, ErrTargetNotAllowed},
		{"N6_name_resolving_to_private", false, "mcp.example.com:443", []string{"10.0.0.1", "192.168.1.1"}, ErrNoPublicAddr},
		{"N6_name_resolving_to_private_lab", true, "mcp.example.com:443", []string{"10.0.0.1", "::1"}, ErrNoPublicAddr},
		{"N6_rebinding_to_loopback", false, "mcp.example.com:443", []string{"127.0.0.1"}, ErrNoPublicAddr},
		{"N6_rebinding_to_metadata", false, "mcp.example.com:8443", []string{"169.254.169.254"}, ErrNoPublicAddr},
		{"N6_name_resolving_to_IPv6_only", false, "mcp.example.com:443", []string{"2606:4700::1"}, ErrNoPublicAddr},
		{"N6_name_resolving_to_IPv4_mapped_only", false, "mcp.example.com:443", []string{"::ffff:8.8.8.8", "::ffff:1.1.1.1"}, ErrNoPublicAddr},
		{"N6_never_mapped_public_literal", false, "[::ffff:8.8.8.8]:443", nil, ErrNoPublicAddr},
		{"N6_name_resolving_to_nothing", false, "mcp.example.com:443", []string{}, ErrNoPublicAddr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTestGuard(t, GuardConfig{
				Lab:         Lab{Enabled: c.lab},
				Resolver:    fixedResolver(c.resolves, nil),
				DialContext: noDial(t),
			})
			conn, err := g.dialTLS(context.Background(), "tcp", c.addr)
			if conn != nil {
				conn.Close()
				t.Fatal("dial returned a connection")
			}
			if kind, _ := g.classify(err, nil); kind != c.kind {
				t.Errorf("dial %s: %v (kind %v), want kind %v", c.addr, err, kind, c.kind)
			}
			if rec := g.Record(); rec.Conns != 0 {
				t.Errorf("Conns = %d, want 0", rec.Conns)
			}
		})
	}
}

// TestDialSocketCheck proves the last line of rule N6: the default dialer
// checks the socket's address again just before connect(2), so even an
// address that slipped past the first check is never connected to. The
// check runs before the connect system call: no packet leaves.
func TestDialSocketCheck(t *testing.T) {
	for _, a := range []string{"10.0.0.1:443", "192.168.1.1:8443", "8.8.8.8:80"} {
		t.Run("N6_socket_refuses_"+a, func(t *testing.T) {
			g := newTestGuard(t, GuardConfig{Lab: Lab{Enabled: true}})
			c, err := g.dialAddr(context.Background(), netip.MustParseAddrPort(a))
			if c != nil {
				c.Close()
				t.Fatal("connected")
			}
			if kind, _ := g.classify(err, nil); kind != ErrNoPublicAddr {
				t.Errorf("dialAddr(%s) = %v (kind %v), want %v", a, err, kind, ErrNoPublicAddr)
			}
		})
	}
}

// TestDialAddressActuallyDialled proves that the dialer connects only to
// the checked address, as a literal, over IPv4 (rule N6): DNS cannot be
// asked again between the check and the connect.
func TestDialAddressActuallyDialled(t *testing.T) {
	cases := []struct {
		name     string
		lab      Lab
		addr     string
		resolves []string
		want     []string // addresses the dialler is asked for, in order
	}{
		{"N6_public_addresses_in_order_private_skipped", Lab{}, "mcp.example.com:443",
			[]string{"10.0.0.1", "::1", "8.8.8.8", "192.168.0.1", "9.9.9.9"}, []string{"8.8.8.8:443", "9.9.9.9:443"}},
		{"N6_mapped_public_AAAA_skipped", Lab{}, "mcp.example.com:8443",
			[]string{"::ffff:8.8.4.4", "9.9.9.9"}, []string{"9.9.9.9:8443"}},
		{"N6_public_literal", Lab{}, "8.8.8.8:443", nil, []string{"8.8.8.8:443"}},
		{"N6_lab_resolve_override_skips_dns", Lab{Enabled: true, Resolve: map[string]string{"MCP.test:8443": "127.0.0.9"}},
			"mcp.TEST:8443", []string{"10.9.9.9"}, []string{"127.0.0.9:8443"}},
		{"N6_lab_resolve_other_port_not_overridden", Lab{Enabled: true, Resolve: map[string]string{"mcp.test:8443": "127.0.0.9"}},
			"mcp.test:443", []string{"8.8.8.8"}, []string{"8.8.8.8:443"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			g := newTestGuard(t, GuardConfig{
				Lab:      c.lab,
				Resolver: fixedResolver(c.resolves, nil),
				// Records what it is asked and connects nowhere: no packet leaves.
				DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
					if network != "tcp4" {
						t.Errorf("network = %q, want tcp4", network)
					}
					mu.Lock()
					got = append(got, addr)
					mu.Unlock()
					return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
				},
			})
			_, err := g.dialTLS(context.Background(), "tcp", c.addr)
			if kind, _ := g.classify(err, nil); kind != ErrRefused {
				t.Errorf("dial error %v (kind %v), want %v", err, kind, ErrRefused)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("dialled %q, want %q", got, c.want)
			}
		})
	}
}

// TestDialFailures proves the classification of network failures at the
// point where they happen, through the guard's client.
func TestDialFailures(t *testing.T) {
	t.Parallel() // waits out real deadlines: alongside the other waiting tests
	// The N10 cases' deadline and its detail; make test runs the full one.
	wait, noAnswer := 200*time.Millisecond, "no answer in 0.2 s"
	if testing.Short() {
		wait, noAnswer = 100*time.Millisecond, "no answer in 0.1 s"
	}
	t.Run("dns_not_found", func(t *testing.T) {
		g := newTestGuard(t, GuardConfig{
			Resolver:    fixedResolver(nil, &net.DNSError{Err: "no such host", Name: "nope.example", IsNotFound: true}),
			DialContext: noDial(t),
		})
		assertFailure(t, g, "https://nope.example/mcp", nil, ErrDNSNotFound, reasonDNSNoAddress)
	})
	t.Run("dns_server_failure", func(t *testing.T) {
		g := newTestGuard(t, GuardConfig{
			Resolver:    fixedResolver(nil, &net.DNSError{Err: "server misbehaving", Name: "x.example", IsTemporary: true}),
			DialContext: noDial(t),
		})
		assertFailure(t, g, "https://x.example/mcp", nil, ErrDNS, "DNS: lookup failed")
	})
	t.Run("N6_name_without_public_address", func(t *testing.T) {
		g := newTestGuard(t, GuardConfig{Resolver: fixedResolver([]string{"10.1.1.1"}, nil), DialContext: noDial(t)})
		assertFailure(t, g, "https://internal.example/mcp", nil, ErrNoPublicAddr, "internal.example resolves to no public IPv4 address")
	})
	t.Run("connection_refused", func(t *testing.T) {
		ap := unusedLoopback8443(t)
		lab := Lab{Enabled: true, Resolve: map[string]string{"down.test:8443": ap.Addr().String()}}
		g := newTestGuard(t, GuardConfig{Lab: lab})
		assertFailure(t, g, "https://down.test:8443/mcp", nil, ErrRefused, "connection refused")
	})
	t.Run("closed_without_answer", func(t *testing.T) {
		srv, rc, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			c.Close()
		}), nil)
		assertFailure(t, g, srv.URL+"/mcp", nil, ErrNetwork, "closed by the server")
		if n := len(rc.seen()); n != 1 {
			t.Errorf("server saw %d requests, want 1 (no silent retry)", n)
		}
	})
	t.Run("N7_not_tls", func(t *testing.T) {
		ln := testutil.ListenLoopback8443(t)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
				c.Close()
			}
		}()
		lab := Lab{Enabled: true, Resolve: map[string]string{"plain.test:8443": netip.MustParseAddrPort(ln.Addr().String()).Addr().String()}}
		g := newTestGuard(t, GuardConfig{Lab: lab})
		assertFailure(t, g, "https://plain.test:8443/mcp", nil, ErrTLSOther, "TLS handshake failed")
	})
	// The N10 cases wait on timers, not on the CPU: they run at once, each
	// in a goroutine of its own, rather than one after another.
	var wg sync.WaitGroup
	atOnce := func(name string, f func(*testing.T)) { wg.Go(func() { t.Run(name, f) }) }
	atOnce("N10_lookup_never_returns", func(t *testing.T) {
		g := newTestGuard(t, GuardConfig{
			Timeout: wait,
			Resolver: func(ctx context.Context, _ string) ([]netip.Addr, error) {
				<-ctx.Done() // only the guard's deadline can end it: the request has none
				return nil, ctx.Err()
			},
			DialContext: noDial(t),
		})
		assertFailure(t, g, "https://slow-dns.example/mcp", nil, ErrTimeout, noAnswer)
	})
	atOnce("N10_accepts_never_handshakes", func(t *testing.T) {
		ln := testutil.ListenLoopback8443(t)
		go holdConns(t, ln)
		lab := Lab{Enabled: true, Resolve: map[string]string{"mute.test:8443": netip.MustParseAddrPort(ln.Addr().String()).Addr().String()}}
		g := newTestGuard(t, GuardConfig{Lab: lab})
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		assertFailure(t, g, "https://mute.test:8443/mcp", ctx, ErrTimeout, "timed out")
	})
	atOnce("N10_handshakes_never_answers", func(t *testing.T) {
		srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}), nil)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		assertFailure(t, g, srv.URL+"/mcp", ctx, ErrTimeout, "timed out")
	})
	atOnce("N10_answer_stalls_midway", func(t *testing.T) {
		srv, _, g := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}), nil)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		assertFailure(t, g, srv.URL+"/mcp", ctx, ErrTimeout, "timed out")
		if ex := lastExchange(t, g); ex.Status != 200 || ex.Bytes == 0 {
			t.Errorf("exchange %+v: want status 200 and the bytes read before the stall", ex)
		}
	})
	wg.Wait()
}

// holdConns accepts connections and never answers, until ln is closed.
func holdConns(t *testing.T, ln net.Listener) {
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		held = append(held, c)
	}
}

// assertFailure POSTs initialize to u (with ctx, when not nil) and checks
// the error kind and detail recorded on the last exchange.
func assertFailure(t *testing.T, g *Guard, u string, ctx context.Context, kind ErrKind, detail string) {
	t.Helper()
	if ctx == nil {
		ctx = context.Background()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(initializeBody))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	resp, err := g.Client().Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatalf("POST %s: no error, want %v", u, kind)
	}
	ex := lastExchange(t, g)
	if ex.ErrKind != kind || ex.Detail != detail {
		t.Errorf("ErrKind %v Detail %q; want %v %q (err %v)", ex.ErrKind, ex.Detail, kind, detail, err)
	}
	if ex.Err == "" {
		t.Error("exchange has no error text for the transcript")
	}
}

// TestSourceAddr proves rule N11: connections leave from the configured
// source address.
func TestSourceAddr(t *testing.T) {
	t.Parallel()
	for _, src := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), testutil.RandomLoopback()} {
		t.Run("N11_source_"+src.String(), func(t *testing.T) {
			rc := &recorder{}
			srv := startLabServer(t, rc, labServerConfig{})
			g := newTestGuard(t, GuardConfig{Lab: srv.Lab, SourceAddr: src})
			if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err != nil {
				t.Fatal(err)
			}
			got := netip.MustParseAddrPort(rc.seen()[0].Remote).Addr()
			if got != src {
				t.Errorf("server saw the check from %s, want %s", got, src)
			}
		})
	}
	t.Run("N11_IPv6_source_refused", func(t *testing.T) {
		if _, err := NewGuard(GuardConfig{SourceAddr: netip.MustParseAddr("::1")}); err == nil {
			t.Error("NewGuard accepted an IPv6 source address")
		}
	})
	// Binding a local address sends no packet: 192.0.2.1 (TEST-NET-1) is
	// no address of this machine, so the bind fails before any connect.
	t.Run("N11_source_not_of_this_machine_fails_at_start", func(t *testing.T) {
		src := netip.MustParseAddr("192.0.2.1")
		_, err := New(Config{SourceAddr: src, Resolver: noResolve(t), DialContext: noDial(t)})
		if err == nil || !errors.Is(err, syscall.EADDRNOTAVAIL) || !strings.Contains(err.Error(), "bind source address 192.0.2.1") {
			t.Errorf("New: %v; want bind source address 192.0.2.1: cannot assign requested address", err)
		}
	})
	// What the kernel says when the source address left the machine after
	// start (the bind fails), or the prober ran out of files: nothing was
	// sent, and the server is not to blame.
	for _, tc := range []struct {
		name   string
		err    error
		detail string
	}{
		{"N11_bind_failure_is_the_probers", os.NewSyscallError("bind", syscall.EADDRNOTAVAIL), "prober error: cannot connect from source address 127.0.0.1"},
		{"N11_no_socket_is_the_probers", os.NewSyscallError("socket", syscall.EMFILE), "prober error: cannot open a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := netip.MustParseAddr("127.0.0.1")
			c := newTestChecker(t, Lab{}, 0, func(cfg *Config) {
				cfg.SourceAddr = src
				cfg.Resolver = fixedResolver([]string{"8.8.8.8", "9.9.9.9"}, nil)
				cfg.DialContext = func(_ context.Context, network, addr string) (net.Conn, error) {
					return nil, &net.OpError{Op: "dial", Net: network, Source: &net.TCPAddr{IP: src.AsSlice()}, Err: tc.err}
				}
			})
			res, rec := c.Check(context.Background(), Target{ID: "s", URL: "https://mcp.example/mcp"})
			if res.Status != data.NotCheckable || res.Detail != tc.detail || rec.Wire.Dials != 1 || !res.ProberFault {
				t.Errorf("concluded %s %q after %d dials, prober fault %v; want not_checkable %q after 1 (the next address would fail alike), a prober fault (never recorded against the server)",
					res.Status, res.Detail, rec.Wire.Dials, res.ProberFault, tc.detail)
			}
		})
	}
}

// TestConnectFailureDetail: no phrase said twice: a
// connect that fails for a reason of the network reads "connection failed:
// no route to host", never "connection failed: connection failed".
func TestConnectFailureDetail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		detail string
	}{
		{"no_route", &net.OpError{Op: "dial", Net: "tcp4", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, "connection failed: no route to host"},
		{"unreachable", &net.OpError{Op: "dial", Net: "tcp4", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, "connection failed: network is unreachable"},
		{"unknown", errors.New("something broke"), "connection failed: network error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestChecker(t, Lab{}, 0, func(cfg *Config) {
				cfg.Resolver = fixedResolver([]string{"8.8.8.8"}, nil)
				cfg.DialContext = func(context.Context, string, string) (net.Conn, error) { return nil, tc.err }
			})
			res, _ := c.Check(context.Background(), Target{ID: "s", URL: "https://mcp.example/mcp"})
			if res.Status != data.Failing || res.Detail != tc.detail {
				t.Errorf("concluded %s %q, want failing %q", res.Status, res.Detail, tc.detail)
			}
		})
	}
}

// TestDialDeadlineShare (rule N10): of a name's
// addresses, one that never answers gets its share of the time left, and
// the next one is tried in time; nothing but the lab server is connected.
func TestDialDeadlineShare(t *testing.T) {
	t.Parallel() // waits out real deadlines: alongside the other waiting tests
	srv := startFlowServer(t, streamableHandler(sdkServer(nil, "a"), true, false), serverOpts{})
	lab := srv.Lab
	lab.Resolve = nil // the name goes through the resolver
	var mu sync.Mutex
	var hung time.Duration
	var tried []string
	timeout := realWait(2*time.Second, 500*time.Millisecond) // each share: timeout/2
	c := newTestChecker(t, lab, timeout, func(cfg *Config) {
		cfg.Resolver = fixedResolver([]string{"8.8.8.8", "9.9.9.9"}, nil)
		cfg.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			tried = append(tried, addr)
			mu.Unlock()
			if addr == "8.8.8.8:8443" { // never answers: wait for the share to end
				start := time.Now()
				<-ctx.Done()
				mu.Lock()
				hung = time.Since(start)
				mu.Unlock()
				return nil, ctx.Err()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Addr.String())
		}
	})
	t.Run("N10_each_address_gets_a_share", func(t *testing.T) {
		res, rec := c.Check(context.Background(), srv.target())
		mu.Lock()
		defer mu.Unlock()
		if res.Status != data.Working {
			t.Fatalf("concluded %s %q, want working; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
		}
		if hung < timeout/2-100*time.Millisecond || hung > timeout/2+100*time.Millisecond {
			t.Errorf("the silent address held the check %v, want half of %v", hung, timeout)
		}
		if len(tried) < 2 || tried[0] != "8.8.8.8:8443" || tried[1] != "9.9.9.9:8443" {
			t.Errorf("dialled %q", tried)
		}
	})
	t.Run("N10_silent_address_tried_last_by_the_next_connection", func(t *testing.T) {
		closing := startLabServer(t, answerWith(http.StatusOK, `{}`, "Connection", "close", "Content-Type", "application/json"), labServerConfig{CA: srv.CA})
		mu.Lock()
		tried = nil
		mu.Unlock()
		g := newTestGuard(t, GuardConfig{
			Lab:      lab,
			Timeout:  timeout,
			Resolver: fixedResolver([]string{"8.8.8.8", "9.9.9.9"}, nil),
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				mu.Lock()
				tried = append(tried, addr)
				mu.Unlock()
				if addr == "8.8.8.8:8443" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				var d net.Dialer
				return d.DialContext(ctx, network, closing.Addr.String())
			},
		})
		for range 2 {
			if _, err := do(t, g, http.MethodPost, srv.URL+"/mcp", initializeBody, nil); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"8.8.8.8:8443", "9.9.9.9:8443", "9.9.9.9:8443"}; !slices.Equal(tried, want) {
			t.Errorf("dialled %q, want %q", tried, want)
		}
	})
}

// TestDialShareCoversHandshake (rule N10): of a
// name's two addresses, the first accepts TCP and never answers the TLS
// handshake; its share of the time ends the handshake too, and the second
// address serves the check. The stalling server got one connection and the
// client's hello, the good one every request.
func TestDialShareCoversHandshake(t *testing.T) {
	t.Parallel() // waits out real deadlines: alongside the other waiting tests
	srv := startFlowServer(t, streamableHandler(sdkServer(nil, "a"), true, false), serverOpts{})
	lab := srv.Lab
	lab.Resolve = nil // the name goes through the resolver
	stall := testutil.ListenLoopback8443(t)
	var stalled atomic.Int64 // connections the stalling server accepted
	var hello atomic.Int64   // bytes it read
	held := make(chan time.Duration, 1)
	go func() {
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			stalled.Add(1)
			go func() {
				defer c.Close()
				start := time.Now()
				n, _ := io.Copy(io.Discard, c) // until the client gives up
				hello.Add(n)
				held <- time.Since(start)
			}()
		}
	}()
	t.Cleanup(func() { stall.Close() })
	timeout := realWait(2*time.Second, 600*time.Millisecond) // the stalling address's share: timeout/2
	c := newTestChecker(t, lab, timeout, func(cfg *Config) {
		cfg.Resolver = fixedResolver([]string{"8.8.8.8", "9.9.9.9"}, nil)
		cfg.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			to := srv.Addr.String()
			if addr == "8.8.8.8:8443" {
				to = stall.Addr().String()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, to)
		}
	})
	t.Run("N10_share_covers_the_TLS_handshake", func(t *testing.T) {
		res, rec := c.Check(context.Background(), srv.target())
		if res.Status != data.Working {
			t.Fatalf("concluded %s %q, want working; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
		}
		var h time.Duration
		select {
		case h = <-held:
		case <-time.After(time.Second):
			t.Fatal("the stalled connection was never closed")
		}
		if h < timeout/2-200*time.Millisecond || h > timeout/2+200*time.Millisecond {
			t.Errorf("the stalling address held the check %v, want half of %v", h, timeout)
		}
		if stalled.Load() != 1 || hello.Load() == 0 {
			t.Errorf("stalling server: %d connections, %d B read; want 1 and a client hello", stalled.Load(), hello.Load())
		}
		if got := len(srv.rec.requests()); got == 0 || rec.Requests != got || rec.Wire.Dials != 2 || rec.Wire.Handshakes != 1 {
			t.Errorf("server got %d requests; record: %d requests, %d dials, %d handshakes; want the same, 2, 1", got, rec.Requests, rec.Wire.Dials, rec.Wire.Handshakes)
		}
	})
}

// TestLab proves that the lab setting only ever adds loopback: flags,
// validation and the CA file.
func TestLab(t *testing.T) {
	ca := testutil.MustCA(t)
	t.Run("flags", func(t *testing.T) {
		var l Lab
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		l.RegisterFlags(fs)
		args := []string{"-lab", "-resolve", "MCP.test:8443:127.0.0.5", "-resolve", "b.test:443:127.1.2.3", "-ca-file", ca.File}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		want := Lab{Enabled: true, Resolve: map[string]string{"mcp.test:8443": "127.0.0.5", "b.test:443": "127.1.2.3"}, CAFile: ca.File}
		if !reflect.DeepEqual(l, want) {
			t.Errorf("parsed %+v, want %+v", l, want)
		}
		if err := l.Validate(); err != nil {
			t.Errorf("Validate: %v", err)
		}
	})
	for _, v := range []string{"mcp.test:8443:10.0.0.1", "mcp.test:8443:192.168.1.1", "mcp.test:8443:::1",
		"mcp.test:8443:8.8.8.8", "mcp.test:127.0.0.1", "mcp.test", "mcp.test:8443:localhost"} {
		t.Run("N6_resolve_loopback_only_"+v, func(t *testing.T) {
			var l Lab
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			l.RegisterFlags(fs)
			if err := fs.Parse([]string{"-lab", "-resolve", v}); err == nil {
				t.Errorf("-resolve %s accepted: %+v", v, l)
			}
		})
	}
	bad := []struct {
		name string
		lab  Lab
	}{
		{"resolve_needs_lab", Lab{Resolve: map[string]string{"a.test:8443": "127.0.0.2"}}},
		{"ca_file_needs_lab", Lab{CAFile: ca.File}},
		{"N6_resolve_private", Lab{Enabled: true, Resolve: map[string]string{"a.test:8443": "10.0.0.1"}}},
		{"resolve_key_without_port", Lab{Enabled: true, Resolve: map[string]string{"a.test": "127.0.0.2"}}},
		{"ca_file_missing", Lab{Enabled: true, CAFile: filepath.Join(t.TempDir(), "none.pem")}},
		{"ca_file_not_pem", Lab{Enabled: true, CAFile: writeFile(t, "junk.pem", "not a certificate")}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewGuard(GuardConfig{Lab: c.lab}); err == nil {
				t.Errorf("NewGuard accepted %+v", c.lab)
			}
		})
	}
	t.Run("lab_off_resolve_ignored", func(t *testing.T) {
		l := Lab{Resolve: map[string]string{"a.test:8443": "127.0.0.2"}}
		if _, ok := l.resolve("a.test", "8443"); ok {
			t.Error("resolve override used without -lab")
		}
		if errors.Is(l.Validate(), errLabOff) != true {
			t.Errorf("Validate = %v, want errLabOff", l.Validate())
		}
	})
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ExampleLab_RegisterFlags() {
	var lab Lab
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lab.RegisterFlags(fs)
	err := fs.Parse([]string{"-lab", "-resolve", "mcp.test:8443:127.0.0.7"})
	fmt.Println(err, lab.Enabled, lab.Resolve["mcp.test:8443"], lab.Validate())

	err = fs.Parse([]string{"-resolve", "mcp.test:8443:10.0.0.7"})
	fmt.Println(err != nil)
	// Output:
	// <nil> true 127.0.0.7 <nil>
	// true
}
