package record

import (
	"slices"
	"time"

	"plug.directory/prober/data"
)

// Certificate is the certificate a server last presented to a check,
// as its file publishes it: what the certificate says, and,
// within the warning, how long it has left at the time the file was
// rendered.
type Certificate struct {
	NotAfter   Time     `json:"not_after"`   // when it expires
	Issuer     string   `json:"issuer"`      // its issuer's distinguished name
	Names      []string `json:"names"`       // the DNS names it covers
	TLSVersion *string  `json:"tls_version"` // the version agreed, "TLS 1.3"; null when the handshake failed before
	SeenAt     Time     `json:"seen_at"`     // start of the last check that saw it
	// DaysLeft is the calendar days (UTC) from the day of the file's
	// rendering to the day it expires (data.TLSInfo.DaysLeft), within the
	// warning only: 14 down to 0. It is null while more are left (not_after
	// says when) and once it has expired: a figure that changes every
	// midnight would need every server's file rendered again at every
	// midnight. Within the warning the file is rendered again at each
	// midnight, without a new check.
	DaysLeft *int `json:"days_left"`
	// Warning says the certificate expires within data.CertWarnDays[0]
	// days or has expired.
	Warning bool   `json:"warning"`
	Expired bool   `json:"expired"` // it has expired: every check fails (table O)
	Message string `json:"message"` // "valid until 2027-03-01", within the warning "expires in 9 days", "expires tomorrow", "expires today", once expired "failing: TLS: certificate has expired"
}

// certSeen is the last certificate a summary's checks saw, and when.
type certSeen struct {
	data.TLSInfo
	At time.Time // start of the check
}

// CertWarning is a certificate's warning in a server's feed: given when
// the certificate's days left came down to one of data.CertWarnDays, or
// when a check first saw it already within one. Once given it stays, when
// the certificate changes too, for the feed's retention.
type CertWarning struct {
	At       Time `json:"at"`        // the midnight (UTC) its days left came down to DaysLeft, or the start of the check that first saw it
	DaysLeft int  `json:"days_left"` // its days left then (data.TLSInfo.DaysLeft)
	NotAfter Time `json:"not_after"` // the certificate's expiry
}

// certWarning is a CertWarning as a summary keeps it, oldest first.
type certWarning struct {
	At       int64 // Unix ms
	Days     int
	NotAfter int64 // Unix ms
}

// noteCert keeps r's certificate when r is the latest check that saw one.
// The warnings the certificate seen before came to until r are given
// first; then a certificate r is the first to see gets a warning at r when
// it is already within the warning (not before: the prober did not know
// it).
func (s *Summary) noteCert(r data.Result) {
	if r.TLS == nil || (s.Cert != nil && r.Started.Before(s.Cert.At)) {
		return
	}
	same := s.Cert != nil && s.Cert.NotAfter.Equal(r.TLS.NotAfter)
	if s.Cert != nil {
		s.WarnCert(r.Started, same)
	}
	if !same {
		if days := r.TLS.DaysLeft(r.Started); days <= data.CertWarnDays[0] && !r.TLS.Expired(r.Started) {
			s.addCertWarning(certWarning{At: r.Started.UnixMilli(), Days: days, NotAfter: r.TLS.NotAfter.UnixMilli()})
		}
	}
	s.Cert = &certSeen{TLSInfo: *r.TLS, At: r.Started}
}

// WarnCert gives the warnings the last certificate seen came to after the
// check that saw it, up to until (until itself too when through: the
// certificate is still the server's then).
func (s *Summary) WarnCert(until time.Time, through bool) {
	c := s.Cert
	if c == nil {
		return
	}
	for _, k := range data.CertWarnDays {
		at := c.DaysLeftFrom(k)
		if at.After(c.At) && (at.Before(until) || through && at.Equal(until)) {
			s.addCertWarning(certWarning{At: at.UnixMilli(), Days: k, NotAfter: c.NotAfter.UnixMilli()})
		}
	}
}

// addCertWarning adds w in time order, once.
func (s *Summary) addCertWarning(w certWarning) {
	i, found := slices.BinarySearchFunc(s.CertWarnings, w, func(a, b certWarning) int {
		if c := cmpInt(a.At, b.At); c != 0 {
			return c
		}
		return cmpInt(a.NotAfter, b.NotAfter)
	})
	if !found {
		s.CertWarnings = slices.Insert(s.CertWarnings, i, w)
	}
}

// CertWarningsLen bounds the certificate warnings a server's record keeps:
// its feed (feed.ServerLen) shows no more.
const CertWarningsLen = 100

// PruneCertWarnings drops the warnings given more than incidentKeep
// before now, as the incidents, and all but the last CertWarningsLen.
func (s *Summary) PruneCertWarnings(now time.Time) {
	from := now.Add(-IncidentKeep).UnixMilli()
	drop := 0
	for drop < len(s.CertWarnings) && s.CertWarnings[drop].At < from {
		drop++
	}
	drop = max(drop, len(s.CertWarnings)-CertWarningsLen)
	if drop > 0 {
		s.CertWarnings = slices.Delete(s.CertWarnings, 0, drop)
	}
}

// certWarningsOf returns the warnings as published: newest first.
func certWarningsOf(ws []certWarning) []CertWarning {
	out := make([]CertWarning, 0, len(ws))
	for _, w := range slices.Backward(ws) {
		out = append(out, CertWarning{At: Time{time.UnixMilli(w.At).UTC()}, DaysLeft: w.Days, NotAfter: Time{time.UnixMilli(w.NotAfter).UTC()}})
	}
	return out
}

// certWarningsFrom reads the warnings back from a published file. A file
// published before they were kept (no certificate_warnings) gives those
// its feed showed then: each of data.CertWarnDays the certificate had come
// down to when last seen, so that none vanishes.
func certWarningsFrom(f ServerFile, c *certSeen) []certWarning {
	var out []certWarning
	for _, w := range slices.Backward(f.CertWarnings) {
		out = append(out, certWarning{At: w.At.UnixMilli(), Days: w.DaysLeft, NotAfter: w.NotAfter.UnixMilli()})
	}
	if f.CertWarnings == nil && c != nil {
		for _, k := range data.CertWarnDays {
			if at := c.DaysLeftFrom(k); !at.After(c.At) {
				out = append(out, certWarning{At: at.UnixMilli(), Days: k, NotAfter: c.NotAfter.UnixMilli()})
			}
		}
	}
	return out
}

// certificateOf returns the published form of c at now; nil for nil.
func certificateOf(c *certSeen, now time.Time) *Certificate {
	if c == nil {
		return nil
	}
	days, expired := c.DaysLeft(now), c.Expired(now)
	out := &Certificate{NotAfter: Time{c.NotAfter.UTC()}, Issuer: c.Issuer, Names: slices.Clone(c.Names), SeenAt: Time{c.At.UTC()},
		Warning: expired || days <= data.CertWarnDays[0], Expired: expired}
	switch {
	case expired:
		// An expired certificate fails every check (table O), and is
		// said so in the words of the check.
		out.Message = data.Failing.Label() + ": " + data.DetailCertExpired
	case out.Warning:
		out.DaysLeft, out.Message = &days, data.ExpiresIn(days)
	default:
		out.Message = "valid until " + c.NotAfter.UTC().Format(time.DateOnly)
	}
	if out.Names == nil {
		out.Names = []string{}
	}
	if c.Version != "" {
		v := c.Version
		out.TLSVersion = &v
	}
	return out
}

// certChange returns when the published form of c next changes without a
// new check: when it comes within the warning, then at each midnight and
// at expiry; zero once it has expired.
func certChange(c *certSeen, now time.Time) time.Time {
	if c == nil || c.Expired(now) {
		return time.Time{}
	}
	days := c.DaysLeft(now)
	if w := data.CertWarnDays[0]; days > w {
		return c.DaysLeftFrom(w)
	}
	if next := c.DaysLeftFrom(days - 1); next.Before(c.NotAfter) {
		return next
	}
	return c.NotAfter
}
