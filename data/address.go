package data

import "strings"

// AddressKey returns the address rawURL is dialled at, written one way
// (issue 14 point 5): the scheme lowercased, the host as LookupName gives it
// (IDNA, lowercased, no trailing dot), the default port of https dropped,
// an empty path written "/", the fragment (never sent) dropped; the path and
// the query are kept as they are, since the server reads them. Two servers
// listed at one key are one endpoint: the planner checks it once for both.
// An address without "://" is its own key.
func AddressKey(rawURL string) string {
	if canonicalAddress(rawURL) {
		return rawURL
	}
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

// canonicalAddress reports whether rawURL is already its own AddressKey, as
// nearly every listed address is: https://, a lowercase ASCII host with no
// trailing dot, no port or one other than 443, a path, no fragment. The
// planner asks it of every server every minute, so it allocates nothing.
func canonicalAddress(rawURL string) bool {
	rest, ok := strings.CutPrefix(rawURL, "https://")
	if !ok {
		return false
	}
	end := strings.IndexByte(rest, '/')
	if end <= 0 || strings.IndexByte(rest[end:], '#') >= 0 {
		return false
	}
	auth := rest[:end]
	host, port, hasPort := strings.Cut(auth, ":")
	if host == "" || host[len(host)-1] == '.' || hasPort && (port == "" || port == "443") {
		return false
	}
	for k := 0; k < len(host); k++ {
		if c := host[k]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	for k := 0; k < len(port); k++ {
		if c := port[k]; c < '0' || c > '9' {
			return false
		}
	}
	return true
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
// scheme://host[:port][/path] by hand: the planner needs the host of every
// server every minute, and url.Parse of a million addresses takes a third
// of a second. Anything unusual goes to HostOf.
func FastHostOf(rawURL string) string {
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
