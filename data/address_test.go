package data

import (
	"strings"
	"testing"
)

// TestAddressKey: the spellings of one address as the check dials it are
// one key; what the server reads (path, query) and
// another port keep addresses apart.
func TestAddressKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://a.example/mcp", "https://a.example/mcp"},
		{"HTTPS://A.Example/mcp", "https://a.example/mcp"},
		{"https://a.example:443/mcp", "https://a.example/mcp"},
		{"https://a.example./mcp", "https://a.example/mcp"},
		{"https://a.example/mcp#tools", "https://a.example/mcp"},
		{"https://a.example", "https://a.example/"},
		{"https://a.example?x=1", "https://a.example/?x=1"},
		{"https://ｅｘａｍｐｌｅ.com/mcp", "https://example.com/mcp"},
		{"https://bücher.example/mcp", "https://xn--bcher-kva.example/mcp"},
		{"https://a.example:8443/mcp", "https://a.example:8443/mcp"},
		{"https://a.example/MCP?Q=1", "https://a.example/MCP?Q=1"},
		{"https://a.example/mcp/", "https://a.example/mcp/"},
		{"http://a.example:443/mcp", "http://a.example:443/mcp"},
		{"https://u:p@A.example/mcp", "https://u:p@a.example/mcp"},
		{"not a url", "not a url"},
	} {
		if got := AddressKey(c.in); got != c.want {
			t.Errorf("AddressKey(%q) = %q, want %q", c.in, got, c.want)
		}
		if usualHost(c.in) != "" && c.in != c.want {
			t.Errorf("%q taken as its own key, but its key is %q", c.in, c.want)
		}
	}
}

// addressShapes are addresses of every shape a ranked list may hold, the
// usual one and each way off it.
var addressShapes = []string{
	"https://host-1.example.net/mcp/1",
	"https://a.b/",
	"https://a.b:8443/mcp",
	"https://a.b:0443/mcp",
	"https://a.b:443/mcp",
	"https://a.b:/mcp",
	"https://a.b./mcp",
	"https://.a.b/mcp",
	"https://A.b/mcp",
	"HTTPS://a.b/mcp",
	"http://a.b/mcp",
	"https://a.b",
	"https://a.b?q=1",
	"https://a.b#f",
	"https://a.b/mcp#f",
	"https://a.b/mcp/a#f/v2",
	"https://a.b/m%20cp",
	"https://a.b/m cp",
	"https://a.b/mcp\x7f",
	"https://a.b/mcp/\x01",
	"https://a.b/très",
	"https://user@a.b/mcp",
	"https://user:pw@a.b/mcp",
	"https://[::1]:8443/mcp",
	"https://a_b/mcp",
	"https://a.b:8443x/mcp",
	"https:///mcp",
	"https://",
	"mcp",
	"",
	"https://a.b/" + strings.Repeat("abcdefgh", 9) + "%",
	"https://a.b/" + strings.Repeat("abcdefgh", 9) + "#",
	"https://a.b/" + strings.Repeat("abcdefgh", 9) + " ",
	"https://a.b/" + strings.Repeat("abcdefgh", 9) + "~!$&'()*+,;=:@?",
	"https://a.b/abcdefg\x80",
	"https://a.b/abcdefg\xff",
	"https://a.b/abcdefg" + "\x20" + "hijklmn",
	"https://a.b/abcdefg" + "\x21" + "hijklmn",
	"https://a.b/abcdefg" + "\x24" + "hijklmn",
	"https://a.b/abcdefg" + "\x26" + "hijklmn",
	"https://a.b/abcdefg" + "\x7e" + "hijklmn",
}

// checkOnePass holds the one pass over the usual shape of address to
// url.Parse (HostOf) and the key of any shape (keyOf): AddressOf,
// FastHostOf and AddressKey give what they stand for, whatever the address
// (rules S2, S3: the slot and the host of every server stand on them).
func checkOnePass(t *testing.T, u string) {
	t.Helper()
	wantHost := HostOf(u)
	wantOwn := wantHost != "" && keyOf(u) == u
	if host, own := AddressOf(u); host != wantHost || own != wantOwn {
		t.Errorf("AddressOf(%q) = %q, %v; want %q, %v", u, host, own, wantHost, wantOwn)
	}
	if got := FastHostOf(u); got != wantHost {
		t.Errorf("FastHostOf(%q) = %q, want %q", u, got, wantHost)
	}
	if got, want := AddressKey(u), keyOf(u); got != want {
		t.Errorf("AddressKey(%q) = %q, want %q", u, got, want)
	}
}

// TestAddressOf is checkOnePass of every shape.
func TestAddressOf(t *testing.T) {
	for _, u := range addressShapes {
		checkOnePass(t, u)
	}
	if usualHost(addressShapes[0]) != "host-1.example.net" {
		t.Errorf("the usual shape %q not read in one pass", addressShapes[0])
	}
}

// FuzzAddressOf is TestAddressOf for any address (go test -fuzz
// FuzzAddressOf ./data).
func FuzzAddressOf(f *testing.F) {
	for _, u := range addressShapes {
		f.Add(u)
	}
	f.Fuzz(checkOnePass)
}
