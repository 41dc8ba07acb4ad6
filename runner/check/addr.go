package check

import "net/netip"

// specialIPv4 are the IANA special-purpose IPv4 ranges a check never connects
// to (rule N6), as SPEC.md lists them.
var specialIPv4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// loopbackIPv4 is the only range the lab setting adds.
var loopbackIPv4 = netip.MustParsePrefix("127.0.0.0/8")

// PublicIPv4 reports whether a is a public IPv4 address (rule N6): a plain
// 4-byte IPv4 address outside every special-purpose range. IPv6 addresses,
// IPv4-mapped IPv6 addresses and the zero Addr are not public IPv4.
func PublicIPv4(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	for _, p := range specialIPv4 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// allowedAddr reports whether a check may connect to a: a public IPv4
// address, or in the lab setting also a loopback IPv4 address. Private ranges
// are never allowed, lab or not.
func allowedAddr(a netip.Addr, lab Lab) bool {
	if PublicIPv4(a) {
		return true
	}
	return lab.Enabled && a.Is4() && loopbackIPv4.Contains(a)
}
