package data

import (
	"net/url"
	"strings"
	"unicode"
)

// MaxLinkBytes bounds a link a server gives of itself (its website, where
// to get a key), as JSON encodes it: a longer one is left out, not cut,
// since a link cut short leads elsewhere.
const MaxLinkBytes = 1024

// WebLink returns s when it is a link a page may show and follow: an
// absolute https URL with a host and no user info, at most MaxLinkBytes
// as JSON encodes it, without spaces or control characters; else "". A
// server names its website and where to get a key in its own answers, so
// a javascript:, data: or http: link, or a page behind a password, never
// reaches a page.
func WebLink(s string) string {
	if len(s) > MaxLinkBytes || jsonLen(s) > MaxLinkBytes || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || !unicode.IsPrint(r) }) {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return ""
	}
	return s
}
