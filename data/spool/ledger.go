package spool

import (
	"errors"
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// The ledger is the planner's memory of what it has already planned: per
// server its claim and next due time, per host the check starts of the last
// 24 hours. It is counted toward the host caps (rule S3) together with what
// has run, so consecutive plans never double-book a host. It is two binary
// files, each replaced atomically: a base of fixed-width records
// (ledgerbase.go) and a delta of what changed since (ledgerdelta.go), so a
// plan of a million servers writes the few hundred records it changed
// (ledgerfiles.go).

// ErrLedgerCorrupt is returned by ReadLedger for a ledger that does not
// decode, whose checksum does not match or of an unknown version. It is
// ErrDamaged.
var ErrLedgerCorrupt error = durable.DamagedError("ledger is corrupt")

// Ledger is what the planner has planned so far.
type Ledger struct {
	Created    int64 // unix s: start of the first minute ever planned; servers listed then are not new
	LastMinute int64 // unix s: start of the last minute planned; 0 when none
	// Servers holds one record per listed server, in the order of the
	// ranked list of the last plan, so the next plan finds most records
	// where it looks first; servers no longer listed are dropped.
	Servers []LedgerServer
	Hosts   map[string][]HostStart // by host: planned starts of the last 24 h, ascending

	index map[string]int // Servers by id, built on first Lookup
	base  *ledgerBase    // the base file read or last written; nil: none of version 5
}

// LedgerServer is the planner's record of one server.
type LedgerServer struct {
	ID          string
	Rank        int32      // rank at the last plan: with ID, the record's place in Servers
	URLHash     uint64     // URLHash of the address the record is about; another address starts afresh (a new server)
	FirstSeen   int64      // unix s: start of the first minute planned while it was listed at this address
	Planned     int64      // unix s: start of its last planned check; 0 when none
	PrevPlanned int64      // Planned before the last planned minute, restored when that minute is planned again
	NextDue     int64      // unix s: its next check: planned, or due (in the past while deferred by the host caps)
	Resume      int64      // unix s: end of the last minute it was paused (rule S8); nothing falls due before it
	Seen        int64      // unix s: start of the last check whose result NextDue was computed from; 0: none
	Cadence     int32      // effective cadence in seconds: its tier's (rule S1), longer when its host has more servers than the caps allow
	Reason      ReasonCode // why the last planned check was planned
	PrevReason  ReasonCode // Reason before the last planned minute
}

// ReasonCode is a check's reason (data.ReasonNew...) in one byte.
type ReasonCode uint8

// The reason codes; ReasonNone for a server never planned.
const (
	ReasonNone ReasonCode = iota
	CodeNew
	CodeRetry
	CodeRoutine
)

var reasonCodes = []string{"", data.ReasonNew, data.ReasonRetry, data.ReasonRoutine}

// String returns the reason as plan files write it, "" for none.
func (r ReasonCode) String() string {
	if int(r) < len(reasonCodes) {
		return reasonCodes[r]
	}
	return ""
}

// NextDueTime returns NextDue as a time, zero when unknown.
func (s LedgerServer) NextDueTime() time.Time { return unixTime(s.NextDue) }

// PlannedTime returns Planned as a time, zero when never planned.
func (s LedgerServer) PlannedTime() time.Time { return unixTime(s.Planned) }

// EffectiveCadence returns how often the server is checked: its tier's
// cadence (rule S1), or longer when its host carries more servers than the
// host caps allow (rule S4, fair sharing). Zero when unknown.
func (s LedgerServer) EffectiveCadence() time.Duration { return time.Duration(s.Cadence) * time.Second }

func unixTime(u int64) time.Time {
	if u == 0 {
		return time.Time{}
	}
	return time.Unix(u, 0).UTC()
}

// HostStart is one planned check start on a host: unix seconds shifted left
// by one, the low bit set for a new server's first check (rule S5 spaces
// those). Ordering HostStarts orders them by time.
type HostStart int64

// MakeHostStart returns the HostStart of a check planned at unix second u.
func MakeHostStart(u int64, isNew bool) HostStart {
	h := HostStart(u << 1)
	if isNew {
		h |= 1
	}
	return h
}

// Unix returns the start in unix seconds.
func (h HostStart) Unix() int64 { return int64(h) >> 1 }

// New reports whether the start is a new server's first check.
func (h HostStart) New() bool { return h&1 == 1 }

// URLHash returns the hash the ledger keeps of a server's address: enough
// to notice that the address changed.
func URLHash(rawURL string) uint64 { return data.StableHash(rawURL, 0x75726c) }

// NewLedger returns an empty ledger: nothing planned yet.
func NewLedger() *Ledger {
	return &Ledger{Hosts: map[string][]HostStart{}}
}

// Lookup returns the record of server id, if the ledger has one. The first
// call indexes the records; call Reindex after changing Servers.
func (l *Ledger) Lookup(id string) (LedgerServer, bool) {
	i, ok := l.Find(id)
	if !ok {
		return LedgerServer{}, false
	}
	return l.Servers[i], true
}

// Find returns the index in Servers of server id's record, as Lookup.
func (l *Ledger) Find(id string) (int, bool) {
	if l.index == nil {
		l.index = make(map[string]int, len(l.Servers))
		for i, s := range l.Servers {
			l.index[s.ID] = i
		}
	}
	i, ok := l.index[id]
	return i, ok
}

// Reindex forgets the index Lookup built, after Servers changed.
func (l *Ledger) Reindex() { l.index = nil }

// LockPlans takes an exclusive lock on the plans of the data directory dir,
// waiting for another planner to finish, so that two overlapping plan runs
// cannot both read the same ledger and double-book a host. unlock releases
// it.
func LockPlans(dir string) (unlock func() error, err error) {
	return durable.LockFile(data.Dir(dir).PlanLock())
}

// Equal reports whether two ledgers hold the same records, in any order.
func (l *Ledger) Equal(o *Ledger) bool {
	if l.Created != o.Created || l.LastMinute != o.LastMinute || len(l.Servers) != len(o.Servers) || len(l.Hosts) != len(o.Hosts) {
		return false
	}
	for _, s := range l.Servers {
		if t, ok := o.Lookup(s.ID); !ok || s != t {
			return false
		}
	}
	for h, s := range l.Hosts {
		if t, ok := o.Hosts[h]; !ok || !slices.Equal(s, t) {
			return false
		}
	}
	return true
}

// RebuildLedger makes a ledger from the plan files of the 24 hours before
// minute, for when the ledger is lost or damaged: every planned start
// counts toward its host's caps again, and each server's last planned check
// is its claim. What the plans do not say (when servers were first listed)
// starts afresh: Created is minute, so servers not yet checked wait for
// their slot rather than counting as new. Unreadable plan files are
// returned in bad and skipped.
func RebuildLedger(dir string, minute time.Time) (l *Ledger, bad []error) {
	l = NewLedger()
	from := minute.Add(-24 * time.Hour).Truncate(time.Minute)
	last := map[string]int{}
	for m := from; m.Before(minute); m = m.Add(time.Minute) {
		checks, b, err := ReadPlan(dir, m)
		bad = append(bad, b...)
		if errors.Is(err, ErrNoPlan) {
			continue
		}
		if err != nil {
			bad = append(bad, err)
			continue
		}
		l.LastMinute = m.Unix()
		for _, c := range checks {
			u := c.At.Unix()
			if c.Host != "" {
				l.Hosts[c.Host] = append(l.Hosts[c.Host], MakeHostStart(u, c.Reason == data.ReasonNew))
			}
			rec := LedgerServer{ID: c.ID, Rank: int32(c.Rank), URLHash: URLHash(c.URL), FirstSeen: minute.Unix(),
				Planned: u, Reason: codeOf(c.Reason), NextDue: u}
			if i, ok := last[c.ID]; ok {
				l.Servers[i] = rec
			} else {
				last[c.ID] = len(l.Servers)
				l.Servers = append(l.Servers, rec)
			}
		}
	}
	for h := range l.Hosts {
		slices.Sort(l.Hosts[h])
	}
	l.Created = minute.Unix()
	return l, bad
}

func codeOf(reason string) ReasonCode {
	for i, r := range reasonCodes {
		if r == reason && i > 0 {
			return ReasonCode(i)
		}
	}
	return ReasonNone
}
