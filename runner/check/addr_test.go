package check

import (
	"fmt"
	"net/netip"
	"testing"
)

// TestPublicIPv4 proves rule N6 on the pure filter: every special-purpose
// range of SPEC.md, its first and last address, and the addresses just
// outside it.
func TestPublicIPv4(t *testing.T) {
	ranges := []struct {
		prefix        string
		before, after string // neighbours outside the range ("" when also special)
	}{
		{"0.0.0.0/8", "", "1.0.0.0"},
		{"10.0.0.0/8", "9.255.255.255", "11.0.0.0"},
		{"100.64.0.0/10", "100.63.255.255", "100.128.0.0"},
		{"127.0.0.0/8", "126.255.255.255", "128.0.0.0"},
		{"169.254.0.0/16", "169.253.255.255", "169.255.0.0"},
		{"172.16.0.0/12", "172.15.255.255", "172.32.0.0"},
		{"192.0.0.0/24", "191.255.255.255", "192.0.1.0"},
		{"192.0.2.0/24", "192.0.1.255", "192.0.3.0"},
		{"192.88.99.0/24", "192.88.98.255", "192.88.100.0"},
		{"192.168.0.0/16", "192.167.255.255", "192.169.0.0"},
		{"198.18.0.0/15", "198.17.255.255", "198.20.0.0"},
		{"198.51.100.0/24", "198.51.99.255", "198.51.101.0"},
		{"203.0.113.0/24", "203.0.112.255", "203.0.114.0"},
		{"224.0.0.0/4", "223.255.255.255", ""},
		{"240.0.0.0/4", "", ""},
	}
	if len(ranges) != len(specialIPv4) {
		t.Fatalf("table has %d ranges, the filter %d: keep them in step with SPEC.md N6", len(ranges), len(specialIPv4))
	}
	for _, r := range ranges {
		p := netip.MustParsePrefix(r.prefix)
		first := p.Addr()
		last := lastAddr(p)
		t.Run("N6_"+r.prefix, func(t *testing.T) {
			for _, a := range []netip.Addr{first, first.Next(), last.Prev(), last} {
				if PublicIPv4(a) {
					t.Errorf("PublicIPv4(%s) = true, want false (in %s)", a, p)
				}
			}
			for _, s := range []string{r.before, r.after} {
				if s == "" {
					continue
				}
				if a := netip.MustParseAddr(s); !PublicIPv4(a) {
					t.Errorf("PublicIPv4(%s) = false, want true (just outside %s)", a, p)
				}
			}
		})
	}
	others := []struct {
		name string
		addr string
		want bool
	}{
		{"N6_public_8.8.8.8", "8.8.8.8", true},
		{"N6_public_1.1.1.1", "1.1.1.1", true},
		{"N6_public_223.255.255.255", "223.255.255.255", true},
		{"N6_broadcast", "255.255.255.255", false},
		{"N6_never_IPv6_global", "2001:4860:4860::8888", false},
		{"N6_never_IPv6_loopback", "::1", false},
		{"N6_never_IPv4_mapped_IPv6", "::ffff:8.8.8.8", false},
	}
	for _, c := range others {
		t.Run(c.name, func(t *testing.T) {
			if got := PublicIPv4(netip.MustParseAddr(c.addr)); got != c.want {
				t.Errorf("PublicIPv4(%s) = %v, want %v", c.addr, got, c.want)
			}
		})
	}
	t.Run("N6_zero_addr", func(t *testing.T) {
		if PublicIPv4(netip.Addr{}) {
			t.Error("PublicIPv4(zero Addr) = true")
		}
	})
}

// lastAddr returns the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As4()
	bits := p.Bits()
	for i := range 4 {
		for j := range 8 {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	return netip.AddrFrom4(b)
}

// TestAllowedAddr proves that the lab setting adds 127.0.0.0/8 and nothing
// else (rule N6 stays for private ranges).
func TestAllowedAddr(t *testing.T) {
	cases := []struct {
		name       string
		addr       string
		lab, plain bool
	}{
		{"N6_lab_loopback", "127.0.0.1", true, false},
		{"N6_lab_loopback_edge", "127.255.255.255", true, false},
		{"N6_lab_never_10", "10.0.0.1", false, false},
		{"N6_lab_never_192.168", "192.168.1.1", false, false},
		{"N6_lab_never_172.16", "172.16.0.1", false, false},
		{"N6_lab_never_169.254", "169.254.169.254", false, false},
		{"N6_lab_never_IPv6_loopback", "::1", false, false},
		{"N6_lab_never_mapped_loopback", "::ffff:127.0.0.1", false, false},
		{"N6_public_both", "8.8.8.8", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := netip.MustParseAddr(c.addr)
			if got := allowedAddr(a, Lab{Enabled: true}); got != c.lab {
				t.Errorf("lab: allowedAddr(%s) = %v, want %v", a, got, c.lab)
			}
			if got := allowedAddr(a, Lab{}); got != c.plain {
				t.Errorf("plain: allowedAddr(%s) = %v, want %v", a, got, c.plain)
			}
		})
	}
}

func ExamplePublicIPv4() {
	for _, s := range []string{"93.184.215.14", "10.0.0.1", "127.0.0.1", "100.64.0.1", "::1"} {
		fmt.Println(s, PublicIPv4(netip.MustParseAddr(s)))
	}
	// Output:
	// 93.184.215.14 true
	// 10.0.0.1 false
	// 127.0.0.1 false
	// 100.64.0.1 false
	// ::1 false
}
