package site

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"plug.directory/prober/data"
)

// Certificate is the certificate a server last presented to a check (issue
// 19 point 1), as its file publishes it: what the certificate says, and
// how long it has left at the time the file was rendered.
type Certificate struct {
	NotAfter   Time     `json:"not_after"`   // when it expires
	Issuer     string   `json:"issuer"`      // its issuer's distinguished name
	Names      []string `json:"names"`       // the DNS names it covers
	TLSVersion *string  `json:"tls_version"` // the version agreed, "TLS 1.3"; null when the handshake failed before
	SeenAt     Time     `json:"seen_at"`     // start of the last check that saw it
	// DaysLeft is the whole days left at the file's rendering
	// (data.TLSInfo.DaysLeft): negative once it has expired. A file is rendered at
	// every check and, from CertWarnDays[0]+1 days before expiry, at each
	// day's change.
	DaysLeft int `json:"days_left"`
	// Warning says the certificate expires within data.CertWarnDays[0]
	// days (DaysLeft at most 14) or has expired.
	Warning bool   `json:"warning"`
	Expired bool   `json:"expired"` // it has expired: every check fails (table O)
	Message string `json:"message"` // "expires in 20 days", "expires today", or once expired "failing: TLS: certificate has expired"
}

// certSeen is the last certificate a summary's checks saw, and when.
type certSeen struct {
	data.TLSInfo
	At time.Time // start of the check
}

// noteCert keeps r's certificate when r is the latest check that saw one.
func (s *summary) noteCert(r data.Result) {
	if r.TLS != nil && (s.Cert == nil || !r.Started.Before(s.Cert.At)) {
		s.Cert = &certSeen{TLSInfo: *r.TLS, At: r.Started}
	}
}

// certificateOf returns the published form of c at now; nil for nil.
func certificateOf(c *certSeen, now time.Time) *Certificate {
	if c == nil {
		return nil
	}
	days := c.DaysLeft(now)
	out := &Certificate{NotAfter: Time{c.NotAfter.UTC()}, Issuer: c.Issuer, Names: slices.Clone(c.Names), SeenAt: Time{c.At.UTC()},
		DaysLeft: days, Warning: days <= data.CertWarnDays[0], Expired: c.Expired(now), Message: expiryMessage(days, c.Expired(now))}
	if out.Names == nil {
		out.Names = []string{}
	}
	if c.Version != "" {
		v := c.Version
		out.TLSVersion = &v
	}
	return out
}

// expiryMessage says a certificate's days left: an expired certificate
// fails every check (table O), and is said so in the words of the check.
func expiryMessage(days int, expired bool) string {
	switch {
	case expired:
		return data.Failing.Label() + ": " + data.DetailCertExpired
	case days == 0:
		return "expires today"
	case days == 1:
		return "expires tomorrow"
	}
	return "expires in " + strconv.Itoa(days) + " days"
}

// certChange returns when the published form of c next changes without a
// new check: at each day's change once the warning is a day away, and at
// expiry; zero when it has expired.
func certChange(c *certSeen, now time.Time) time.Time {
	if c == nil || c.Expired(now) {
		return time.Time{}
	}
	days := c.DaysLeft(now)
	if w := data.CertWarnDays[0] + 1; days >= w {
		return c.NotAfter.Add(-time.Duration(w) * 24 * time.Hour)
	}
	return c.NotAfter.Add(-time.Duration(days) * 24 * time.Hour)
}

// certFeedEntries returns the server feed's entries of a certificate
// coming to its end: one for each of data.CertWarnDays the certificate is
// within (newest first), at the time its days left came down to it.
func certFeedEntries(id string, c *Certificate) []feedEntry {
	if c == nil {
		return nil
	}
	var out []feedEntry
	for _, k := range slices.Backward(data.CertWarnDays) {
		if c.DaysLeft <= k {
			at := c.NotAfter.Add(-time.Duration(k+1) * 24 * time.Hour).UnixMilli()
			out = append(out, feedEntry{ID: id, At: at, Kind: feedCertificate, Days: k, NotAfter: c.NotAfter.UnixMilli()})
		}
	}
	return out
}

// The certificate badge's colours: past the warning, within it, within
// its last days, expired.
const (
	certColorValid   = "brightgreen"
	certColorWarning = "yellow"
	certColorLast    = "orange"
	certColorExpired = "red"
)

// CertificateBadgeLabel is the left-hand text of the certificate badge.
const CertificateBadgeLabel = "certificate"

// CertificateBadgeOf returns badges-certificate/<id>.json: "valid until
// 2027-03-01" (a message that changes only with the certificate), "expires
// in 9 days" within the warning, "failing: TLS: certificate has expired",
// or "none seen" when no check saw one.
func CertificateBadgeOf(c *Certificate) Badge {
	b := Badge{SchemaVersion: 1, Label: CertificateBadgeLabel, Message: "none seen", Color: "lightgrey"}
	switch {
	case c == nil:
	case c.Expired:
		b.Message, b.Color = c.Message, certColorExpired
	case c.DaysLeft <= data.CertWarnDays[len(data.CertWarnDays)-1]:
		b.Message, b.Color = c.Message, certColorLast
	case c.Warning:
		b.Message, b.Color = c.Message, certColorWarning
	default:
		b.Message, b.Color = fmt.Sprintf("valid until %s", c.NotAfter.Format(time.DateOnly)), certColorValid
	}
	return b
}
