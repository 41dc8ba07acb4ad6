package data

import "time"

// TLSInfo is what a check saw of a server's TLS session: the version agreed
// and the leaf certificate the server presented (issue 19 point 1). It
// comes from the handshake the check makes anyway; a certificate that
// failed verification (expired, another name) is described too, from the
// certificate the server sent, so an owner sees which one it was.
type TLSInfo struct {
	Version  string    `json:"version,omitempty"` // "TLS 1.3"; "" when the handshake did not get that far
	NotAfter time.Time `json:"not_after"`         // when the leaf certificate expires, UTC
	Issuer   string    `json:"issuer"`            // its issuer's distinguished name, "CN=R11,O=Let's Encrypt,C=US"
	Names    []string  `json:"names,omitempty"`   // the DNS names it covers (subject alternative names)
}

// CertWarnDays are the days before a certificate expires at which the site
// warns: the page and the badge from the first, the server's feed at each.
var CertWarnDays = []int{14, 3}

// DaysLeft returns the whole days left before the certificate expires:
// n while more than n and at most n+1 days are left, so 14 from the moment
// 15 days are left, 0 on its last day, and negative once it has expired
// (Expired).
func (t TLSInfo) DaysLeft(now time.Time) int {
	const day = 24 * time.Hour
	d := t.NotAfter.Sub(now)
	if d <= 0 {
		return -1 - int(-d/day)
	}
	return int((d+day-1)/day) - 1
}

// Expired reports whether the certificate has expired at now.
func (t TLSInfo) Expired(now time.Time) bool { return !now.Before(t.NotAfter) }

// The bounds of a recorded certificate: its names are the server's to
// choose, and a certificate may carry thousands.
const (
	MaxCertNames      = 100     // names kept at most
	MaxCertNamesBytes = 8 << 10 // their encoding at most
	maxCertNameBytes  = 256     // each name's encoding at most
)
