package planner

import (
	"strings"
	"testing"

	"plug.directory/prober/data"
)

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

// addressOfSlowly is what addressOf returns, by the functions it stands
// for.
func addressOfSlowly(rawURL string) (string, bool) {
	h := hostOf(rawURL)
	return h, h != "" && data.AddressKey(rawURL) == rawURL
}

// TestAddressOf: the one pass over the usual shape of address gives the
// host and the key hostOf and data.AddressKey give, whatever the address
// (rules S2, S3: the slot and the host of every server stand on them).
func TestAddressOf(t *testing.T) {
	for _, u := range addressShapes {
		host, own := addressOf(u)
		if wantHost, wantOwn := addressOfSlowly(u); host != wantHost || own != wantOwn {
			t.Errorf("addressOf(%q) = %q, %v; want %q, %v", u, host, own, wantHost, wantOwn)
		}
	}
	if usualHost(addressShapes[0]) != "host-1.example.net" {
		t.Errorf("the usual shape %q not read in one pass", addressShapes[0])
	}
}

// FuzzAddressOf is TestAddressOf for any address (go test -fuzz
// FuzzAddressOf ./planner).
func FuzzAddressOf(f *testing.F) {
	for _, u := range addressShapes {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		host, own := addressOf(u)
		if wantHost, wantOwn := addressOfSlowly(u); host != wantHost || own != wantOwn {
			t.Errorf("addressOf(%q) = %q, %v; want %q, %v", u, host, own, wantHost, wantOwn)
		}
	})
}
