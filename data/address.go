package data

import "strings"

// AddressKey returns the address rawURL is dialled at, written one way:
// the scheme lowercased, the host as LookupName gives it
// (IDNA, lowercased, no trailing dot), the default port of https dropped,
// an empty path written "/", the fragment (never sent) dropped; the path and
// the query are kept as they are, since the server reads them. Two servers
// listed at one key are one endpoint: the planner checks it once for both.
// An address without "://" is its own key.
func AddressKey(rawURL string) string {
	if usualHost(rawURL) != "" {
		return rawURL
	}
	return keyOf(rawURL)
}

// keyOf is AddressKey of an address of any shape, the usual one too.
func keyOf(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i <= 0 {
		return rawURL
	}
	scheme, rest := strings.ToLower(rawURL[:i]), rawURL[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth, tail := rest[:end], rest[end:]
	if k := strings.IndexByte(tail, '#'); k >= 0 {
		tail = tail[:k]
	}
	if tail == "" || tail[0] == '?' {
		tail = "/" + tail
	}
	user := ""
	if k := strings.LastIndexByte(auth, '@'); k >= 0 {
		user, auth = auth[:k+1], auth[k+1:]
	}
	host, port := auth, ""
	if k := strings.LastIndexByte(auth, ':'); k >= 0 && !strings.Contains(auth[k:], "]") {
		host, port = auth[:k], auth[k:]
	}
	if port == ":" || scheme == "https" && port == ":443" {
		port = ""
	}
	return scheme + "://" + user + LookupName(host) + port + tail
}

// SharedAddresses returns, for each server listed at an address
// (AddressKey) with others, the ids of the others in the order of servers;
// servers alone at their address, or without one, are not in it.
func SharedAddresses(servers []Server) map[string][]string {
	byKey := map[string][]string{}
	for _, s := range servers {
		if s.URL != "" {
			k := AddressKey(s.URL)
			byKey[k] = append(byKey[k], s.ID)
		}
	}
	out := map[string][]string{}
	for _, ids := range byKey {
		if len(ids) < 2 {
			continue
		}
		for _, id := range ids {
			others := make([]string, 0, len(ids)-1)
			for _, o := range ids {
				if o != id {
					others = append(others, o)
				}
			}
			out[id] = others
		}
	}
	return out
}

// FastHostOf returns HostOf(rawURL), parsing the common shape
// scheme://host[:port][/path] by hand: the ranked list's reader needs the
// host of every server, and url.Parse of a million addresses takes a third
// of a second. The usual shape (see AddressOf) is read in one pass;
// anything unusual goes to HostOf.
func FastHostOf(rawURL string) string {
	if h := usualHost(rawURL); h != "" {
		return h
	}
	i := strings.Index(rawURL, "://")
	if i <= 0 {
		return HostOf(rawURL)
	}
	for _, c := range []byte(rawURL[:i]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return HostOf(rawURL)
		}
	}
	rest := rawURL[i+3:]
	end := len(rest)
	for k := 0; k < len(rest); k++ {
		c := rest[k]
		if c <= ' ' || c == 0x7f || c == '%' || c >= 0x80 {
			return HostOf(rawURL) // let url.Parse judge escapes and control bytes
		}
		if end == len(rest) && (c == '/' || c == '?' || c == '#') {
			end = k
		}
	}
	auth := rest[:end]
	colon := -1
	upper := false
	for k := 0; k < len(auth); k++ {
		c := auth[k]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.':
			if colon >= 0 && !('0' <= c && c <= '9') {
				return HostOf(rawURL)
			}
		case 'A' <= c && c <= 'Z':
			if colon >= 0 {
				return HostOf(rawURL)
			}
			upper = true
		case c == ':' && colon < 0:
			colon = k
		default:
			return HostOf(rawURL)
		}
	}
	host := auth
	if colon >= 0 {
		host = auth[:colon]
	}
	if host == "" {
		return HostOf(rawURL)
	}
	if upper {
		host = strings.ToLower(host)
	}
	return strings.TrimSuffix(host, ".")
}

// AddressOf returns the host of an address (FastHostOf) and whether the
// address is its own AddressKey. The usual shape, https://host[:port]/path
// with a lowercase host, a port other than 443, and a path of plain bytes
// with no fragment, is read in one pass (the planner asks it of a million
// addresses every minute, and it allocates nothing); any other is left to
// FastHostOf and AddressKey, which give the same for the usual shape.
func AddressOf(rawURL string) (host string, ownKey bool) {
	if h := usualHost(rawURL); h != "" {
		return h, true
	}
	h := FastHostOf(rawURL)
	return h, h != "" && AddressKey(rawURL) == rawURL
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
// AddressOf), else "".
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
