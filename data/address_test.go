package data

import (
	"testing"
)

// TestAddressKey: the spellings of one address as the check dials it are
// one key (issue 14 point 5); what the server reads (path, query) and
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
		if canonicalAddress(c.in) && c.in != c.want {
			t.Errorf("%q taken as its own key, but its key is %q", c.in, c.want)
		}
	}
}
