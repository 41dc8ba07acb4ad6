package data

import "testing"

// TestHostOf proves that the host of rule S3 is the name actually looked
// up: net/http maps a name through IDNA (idna.Lookup) before it dials, so
// two spellings of one name are one host to the planner, as they are one to
// DNS. FastHostOf, the ranked list's reader, agrees on each.
func TestHostOf(t *testing.T) {
	cases := []struct {
		name, url, want string
	}{
		{"S3_lowercased_port_ignored", "https://MCP.Example.COM:8443/mcp", "mcp.example.com"},
		{"S3_trailing_dot", "https://mcp.example.com./mcp", "mcp.example.com"},
		{"S3_fullwidth_is_ascii", "https://ｅｘａｍｐｌｅ.com/mcp", "example.com"},
		{"S3_fullwidth_dot", "https://mcp．example．com/mcp", "mcp.example.com"},
		{"S3_idn_unicode", "https://bücher.example/mcp", "xn--bcher-kva.example"},
		{"S3_idn_unicode_capital", "https://BÜCHER.example/mcp", "xn--bcher-kva.example"},
		{"S3_idn_punycode", "https://xn--bcher-kva.example/mcp", "xn--bcher-kva.example"},
		{"S3_idn_punycode_capital", "https://XN--BCHER-KVA.example/mcp", "xn--bcher-kva.example"},
		{"S3_idn_percent_encoded", "https://b%C3%BCcher.example/mcp", "xn--bcher-kva.example"},
		{"S3_ip_literal", "https://8.8.8.8:443/mcp", "8.8.8.8"},
		{"S3_no_host", "https:///mcp", ""},
		{"S3_no_address", "", ""},
		{"S3_does_not_parse", "https://a b.example/", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := HostOf(c.url); got != c.want {
				t.Errorf("HostOf(%q) = %q, want %q", c.url, got, c.want)
			}
			if got := FastHostOf(c.url); got != c.want {
				t.Errorf("FastHostOf(%q) = %q, want %q", c.url, got, c.want)
			}
		})
	}
	t.Run("S3_one_host_for_both_spellings", func(t *testing.T) {
		if a, b := HostOf("https://bücher.example/a"), HostOf("https://xn--bcher-kva.example:8443/b"); a != b {
			t.Errorf("bücher.example is %q, xn--bcher-kva.example is %q: two hosts to the planner, one to DNS", a, b)
		}
	})
}
