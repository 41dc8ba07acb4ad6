package data

import (
	"strings"
	"testing"
)

// TestWebLink: only an absolute https link with a host, no user info, no
// space or control character, within MaxLinkBytes as JSON encodes it,
// reaches a page (a server's website, where it says to get a key).
func TestWebLink(t *testing.T) {
	for _, c := range []struct {
		link string
		keep bool
	}{
		{"https://example.com", true},
		{"https://auth.example.com/.well-known/oauth-protected-resource/mcp", true},
		{"HTTPS://example.com/a?b=c#d", true},
		{"http://example.com", false},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(1)", false},
		{"data:text/html,<script>alert(1)</script>", false},
		{"//example.com/x", false},
		{"/relative", false},
		{"https://user:pw@example.com/", false},
		{"https:///no-host", false},
		{"https://example.com/a b", false},
		{"https://example.com/\x00", false},
		{"https://example.com/\u2028", false},
		{"https://example.com/" + strings.Repeat("a", MaxLinkBytes), false},
		{"https://example.com/?" + strings.Repeat("&", MaxLinkBytes/6), false}, // each & is \u0026 in JSON
		{"https://example.com/?" + strings.Repeat("&", MaxLinkBytes/6-10), true},
		{"", false},
	} {
		want := ""
		if c.keep {
			want = c.link
		}
		if got := WebLink(c.link); got != want {
			t.Errorf("WebLink(%.60q) = %.60q, keep %v", c.link, got, c.keep)
		}
	}
}
