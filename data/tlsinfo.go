package data

import "time"

// TLSInfo is what a check saw of a server's TLS session: the version agreed
// and the leaf certificate the server presented. It
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

// DaysLeft returns the calendar days (UTC) from now's day to the day the
// certificate expires: 2 two days before that day, 1 the day before, 0 on
// the day itself, negative on the days after. It counts dates, not
// durations, so that a certificate valid to 9999-12-31 (RFC 5280's "no
// expiry") has some 2.9 million days left rather than the saturated
// -106751 of NotAfter.Sub; and the count changes only at midnight UTC, for
// every certificate at once. On its last day a certificate may have
// expired already (Expired).
func (t TLSInfo) DaysLeft(now time.Time) int {
	return int((dayStart(t.NotAfter).Unix() - dayStart(now).Unix()) / secondsPerDay)
}

// DaysLeftFrom returns the moment DaysLeft comes down to k: the start
// (midnight UTC) of the k-th day before the day of expiry.
func (t TLSInfo) DaysLeftFrom(k int) time.Time {
	return dayStart(t.NotAfter).AddDate(0, 0, -k)
}

const secondsPerDay = 24 * 60 * 60

// dayStart returns midnight UTC of t's day.
func dayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
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
