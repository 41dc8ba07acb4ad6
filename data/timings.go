package data

import "time"

// Timings is where the time of one check went, phase by phase, summed over
// its connections, as the check measured it around the
// steps it takes anyway: a lookup, a connect, a handshake, each request.
// A phase the check never reached (no connection: no handshake) is nil.
type Timings struct {
	DNS     *time.Duration `json:"dns,omitempty"`     // name lookups; nil when none was asked (an IP address, the lab's override)
	Connect *time.Duration `json:"connect,omitempty"` // TCP connects, failed attempts included
	TLS     *time.Duration `json:"tls,omitempty"`     // TLS handshakes, failed ones included
	// FirstByte is, per answer in the order the requests were made, the
	// time from the request written to the first byte of its answer: the
	// server's handling plus a round trip.
	FirstByte []time.Duration `json:"first_byte,omitempty"`
}

// MaxFirstBytes bounds the answers whose first-byte times a result keeps;
// a check makes a few requests, at most some twenty.
const MaxFirstBytes = 32

// FirstByteTotal returns the first-byte times of all answers summed, the
// time the check waited for the server; nil when no answer came.
func (t *Timings) FirstByteTotal() *time.Duration {
	if t == nil || len(t.FirstByte) == 0 {
		return nil
	}
	var s time.Duration
	for _, d := range t.FirstByte {
		s += d
	}
	return &s
}

// MillisOf returns *d in whole milliseconds, the unit of the history and the
// site; nil for nil (a phase that did not apply).
func MillisOf(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// FromMillis is the inverse of MillisOf.
func FromMillis(ms *int64) *time.Duration {
	if ms == nil {
		return nil
	}
	d := time.Duration(*ms) * time.Millisecond
	return &d
}
