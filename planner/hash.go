package planner

import (
	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// addresses holds what each server's address hashes to: the ledger notices
// a new address by its hash, and hosts are told apart by two hashes of
// their name.
type addresses struct {
	urlHash  []uint64
	keyHash  []uint64 // of data.AddressKey: servers at one address share it
	hostName []string // "" for a server without an address
	hostHash []uint64 // two hashes of the host's name per server
}

// hashAddresses hashes every server's address side by side on every core.
// At a million servers a plan is mostly waiting for memory.
func (p *pass) hashAddresses() {
	servers := p.in.Servers
	n := len(servers)
	a := addresses{urlHash: make([]uint64, n), keyHash: make([]uint64, n), hostName: make([]string, n), hostHash: make([]uint64, 2*n)}
	inParallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := &servers[i]
			a.urlHash[i] = spool.URLHash(s.URL)
			if h, ownKey := addressOf(s.URL); h != "" {
				a.keyHash[i] = a.urlHash[i] // nearly every address is its own key
				if !ownKey {
					a.keyHash[i] = spool.URLHash(data.AddressKey(s.URL))
				}
				a.hostName[i] = h
				a.hostHash[2*i], a.hostHash[2*i+1] = data.StableHash(h, 0x686f7374), data.StableHash(h, 0x6e616d65)
			}
		}
	})
	p.addrs = a
}

// addressOf returns the host of an address (hostOf) and whether the address
// is its own data.AddressKey. The usual shape, https://host[:port]/path
// with a lowercase host, a port other than 443, and a path of plain bytes
// with no fragment, is read in one pass (a million addresses every
// minute); any other is left to hostOf and data.AddressKey, which give the
// same for the usual shape.
func addressOf(rawURL string) (host string, ownKey bool) {
	if h := usualHost(rawURL); h != "" {
		return h, true
	}
	h := hostOf(rawURL)
	return h, h != "" && data.AddressKey(rawURL) == rawURL
}

// hostByte holds the bytes of a host name in the usual shape: lowercase
// ASCII letters, digits, '-' and '.'.
var hostByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.'
	}
	return t
}()

// usualHost returns the host of rawURL when it has the usual shape (see
// addressOf), else "".
func usualHost(rawURL string) string {
	const scheme = "https://"
	if len(rawURL) <= len(scheme) || rawURL[:len(scheme)] != scheme {
		return ""
	}
	rest := rawURL[len(scheme):]
	k := 0
	for k < len(rest) && hostByte[rest[k]] {
		k++
	}
	if k == 0 || rest[k-1] == '.' {
		return ""
	}
	host := rest[:k]
	if k < len(rest) && rest[k] == ':' {
		p := k + 1
		for p < len(rest) && '0' <= rest[p] && rest[p] <= '9' {
			p++
		}
		if port := rest[k+1 : p]; port == "" || port == "443" {
			return ""
		}
		k = p
	}
	if k == len(rest) || rest[k] != '/' || !plainPath(rest[k:]) {
		return ""
	}
	return host
}

// plainPath reports whether s holds no byte that would send its address
// off the usual shape: a control byte or space, DEL, '%', '#', or one
// outside ASCII. Eight bytes at a time.
func plainPath(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; len(s) >= 8; s = s[8:] {
		w := word(s)
		if w&highs != 0 {
			return false
		}
		// A byte below 0x21, or one equal to DEL, '%' or '#': with no high
		// bit set each test is exact (Bit Twiddling Hacks' hasless and
		// haszero).
		del, pct, hash := w^(0x7f*ones), w^('%'*ones), w^('#'*ones)
		bad := (w-0x21*ones)&^w | (del-ones)&^del | (pct-ones)&^pct | (hash-ones)&^hash
		if bad&highs != 0 {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '%' || c == '#' {
			return false
		}
	}
	return true
}

// word returns the first eight bytes of s, little-endian.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
