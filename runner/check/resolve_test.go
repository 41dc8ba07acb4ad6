package check

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"plug.directory/prober/internal/testutil"
)

// fakeDNS is a DNS server on a loopback UDP :8443 that answers from zone:
// a name in zone gets its A and AAAA records (NOERROR, perhaps empty), any
// other name NXDOMAIN. It counts the questions asked by type.
type fakeDNS struct {
	zone map[string][]netip.Addr // "name." -> addresses
	pc   net.PacketConn

	mu    sync.Mutex
	asked map[string]int // "A v6only.example." -> count
}

// startFakeDNS starts a fakeDNS, stopped when the test ends, and returns a
// resolver that asks only it.
func startFakeDNS(tb testing.TB, zone map[string][]netip.Addr) (*fakeDNS, *net.Resolver) {
	tb.Helper()
	var pc net.PacketConn
	var err error
	for range 100 {
		pc, err = net.ListenPacket("udp4", netip.AddrPortFrom(testutil.RandomLoopback(), 8443).String())
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		tb.Fatalf("listen udp: %v", err)
	}
	d := &fakeDNS{zone: zone, pc: pc, asked: map[string]int{}}
	done := make(chan struct{})
	go func() { defer close(done); d.serve() }()
	tb.Cleanup(func() { pc.Close(); <-done })
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, "udp4", pc.LocalAddr().String())
	}}
	return d, r
}

func (d *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if out, ok := d.answer(buf[:n]); ok {
			d.pc.WriteTo(out, from)
		}
	}
}

// answer builds the reply to one query.
func (d *fakeDNS) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(q.Name.String())
	d.mu.Lock()
	d.asked[q.Type.String()[len("Type"):]+" "+name]++
	d.mu.Unlock()
	addrs, known := d.zone[name]
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	res := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			b.AResource(res, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			b.AAAAResource(res, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

// TestIPv6Only (rule N6,
// table O): a name with AAAA records and no A record is not checkable,
// "resolves to no public IPv4 address", and nothing is dialled, also when
// its AAAA record holds an IPv4-mapped public address (an IPv6 record:
// never dialled as IPv4); a name without any address is failing. net's
// resolver reports a name that does not exist (NXDOMAIN) and one without A
// and AAAA records (NODATA) alike, so both read "DNS: name not found or
// has no address".
func TestIPv6Only(t *testing.T) {
	dns, r := startFakeDNS(t, map[string][]netip.Addr{
		"v6only.example.": {netip.MustParseAddr("2001:db8::1")},
		"mapped.example.": {netip.MustParseAddr("::ffff:8.8.8.8")},
		"nodata.example.": {},
	})
	tests := []struct {
		name     string
		resolver func(context.Context, string) ([]netip.Addr, error)
		url      string
		verdict  string
	}{
		{"N6_AAAA_only_name_through_DNS", LookupIP(r), "https://v6only.example/mcp", "not_checkable: resolves to no public IPv4 address"},
		{"N6_AAAA_only_name_injected", fixedResolver([]string{"2001:db8::1", "2606:4700::1111"}, nil), "https://v6.example/mcp", "not_checkable: resolves to no public IPv4 address"},
		{"N6_AAAA_IPv4_mapped_through_DNS", LookupIP(r), "https://mapped.example/mcp", "not_checkable: resolves to no public IPv4 address"},
		{"N6_AAAA_IPv4_mapped_injected", fixedResolver([]string{"::ffff:8.8.8.8"}, nil), "https://mapped.example/mcp", "not_checkable: resolves to no public IPv4 address"},
		{"O_NXDOMAIN_is_not_found", LookupIP(r), "https://nope.example/mcp", "failing: " + reasonDNSNoAddress},
		{"O_NODATA_has_no_address", LookupIP(r), "https://nodata.example/mcp", "failing: " + reasonDNSNoAddress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestChecker(t, Lab{}, 0, func(cfg *Config) {
				cfg.Resolver = tc.resolver
				cfg.DialContext = noDial(t)
			})
			res, rec := c.Check(context.Background(), Target{ID: "s", URL: tc.url})
			if v := string(res.Status) + ": " + res.Detail; v != tc.verdict {
				t.Errorf("concluded %q, want %q; transcript:\n%s", v, tc.verdict, transcriptText(rec))
			}
			if rec.Wire.Dials != 0 || rec.Requests != 0 {
				t.Errorf("dials %d, requests %d; want none", rec.Wire.Dials, rec.Requests)
			}
		})
	}
	dns.mu.Lock()
	defer dns.mu.Unlock()
	for _, name := range []string{"v6only.example.", "mapped.example."} {
		if dns.asked["AAAA "+name] == 0 || dns.asked["A "+name] == 0 {
			t.Errorf("DNS questions %v: want A and AAAA of %s", dns.asked, name)
		}
	}
}
