package planner

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"plug.directory/prober/data"
)

// ErrPast is returned by Plan for a minute that has begun: a check is never
// planned in the past (rule S9).
var ErrPast = errors.New("the minute has begun: never plan in the past")

// ErrPlannedAfter is returned by Plan for a minute before the last one the
// ledger holds: its checks would be counted twice.
var ErrPlannedAfter = errors.New("a later minute is already planned")

const minute = 60 // seconds

// Planner plans one minute of checks at a time (rules S1-S9).
type Planner struct {
	Now    func() time.Time // nil means time.Now
	Logger *slog.Logger     // nil means no logs
}

// Input is what one plan is made from.
type Input struct {
	Servers []data.Server         // the ranked list in its order (data.SortServers)
	Paused  map[string]bool       // ids of servers not to check (rule S8)
	States  map[string]data.State // what the runner learned, by server id
	// StatesOf, used when States is nil, reads the states of the servers
	// whose id keep keeps (nil: every one), as data.LoadStatesOf. A plan
	// looks at the state of only the servers that may be owed a check, a
	// few thousand of a million, so it need not read the rest.
	StatesOf func(keep func(id string) bool) (map[string]data.State, error)
	// Running holds the minutes (unix s) whose run is still going
	// (data.LiveRuns), read before the states. A check planned in a
	// minute that has begun, with no result and no run going, was lost
	// (a killed run, a plan that could not be read or was never written)
	// and is owed again at once. nil: no run is going.
	Running map[int64]bool
	// FirstCheckSoon makes the servers listed at the first plan and never
	// checked due at once, placed as the host caps allow, rather than at
	// their slot (within the hour for the top 2,000, the day for the
	// rest). Servers listed later are new servers either way (rule S5).
	FirstCheckSoon bool
	// NeverPlanned lets Plan plan a minute before the ledger's last one
	// that was never planned (no plan file): the clock went backwards.
	// Nothing is taken back, and the later minutes' starts still count.
	NeverPlanned bool
}

// Report is one planned minute.
type Report struct {
	Minute   time.Time           // start of the minute planned
	Checks   []data.PlannedCheck // by start, then id
	New      int                 // checks of each reason
	Retry    int
	Routine  int
	Again    int           // checks planned again: planned before, lost with no result (see Input.Running)
	Deferred int           // checks due by the end of the minute that the host caps push to a later one (rule S4)
	Longest  time.Duration // longest wait of a deferred check so far
	Removed  int           // servers dropped from the ledger: no longer listed
	// Waiting counts the servers listed at the first plan, never checked,
	// that wait for their slot: from FirstWait to LastWait. First is set
	// for the first plan of a ledger.
	Waiting             int
	FirstWait, LastWait time.Time
	First               bool
}

func (p *Planner) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

func (p *Planner) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

// class is why a check is owed, in the order rule S4 places them: it
// carries the reason the plan file and the ledger record.
type class int8

const (
	classNew     class = iota // a new server's first check (rule S5)
	classRetry                // a failing server's retry (rule S6)
	classAgain                // a routine check planned before and lost: owed at once
	classRoutine              // the server's usual slot (rules S1, S2)
)

// code returns the reason the ledger records for a check of class c.
func (c class) code() data.ReasonCode {
	switch c {
	case classNew:
		return data.CodeNew
	case classRetry:
		return data.CodeRetry
	default:
		return data.CodeRoutine
	}
}

// The host index of a server that has no host to count on.
const (
	noHost       int32 = -1 // no address: the check concludes not_checkable without a connection
	pausedHost   int32 = -2 // paused (rule S8): not planned, not counted
	followerHost int32 = -3 // at an address another server leads (see sharing): not planned, not counted
)

// candidate is a check owed by the end of the minute being planned.
type candidate struct {
	server int   // index in Input.Servers: rank order, ties by id
	host   int32 // index in hostIndex.hosts, or noHost
	class  class
	due    int64 // unix s
	// learned by earlier checks of this address, for the runner (rule N4)
	protocol, transport string
}

// hostWork is one host during a plan: its stretch, and the starts counted
// toward its caps (rule S3).
type hostWork struct {
	name    string
	stretch int64  // eighths (see hostStretch)
	used    uint64 // seconds of the minute taken, one bit each
	starts  []data.HostStart
	changed bool
}

// Plan plans the minute starting at at (a whole minute, after Now) and
// records it in the ledger l. Planning the last minute of the ledger again
// first takes back what that plan recorded, so the same inputs give the same
// plan. A minute before the ledger's last one is ErrPlannedAfter; a minute
// that has begun is ErrPast. l is unchanged on error, but for an error of
// in.StatesOf, after which l is to be read again.
//
// Its phases: hash the addresses, share the addresses listed more than
// once, index the hosts, match the ledger, collect what is owed, place,
// mirror each shared address's planning onto its servers.
func (p *Planner) Plan(at time.Time, in Input, l *data.Ledger) (Report, error) {
	start := at.Unix()
	rep := Report{Minute: at.UTC()}
	if start%minute != 0 || at.Nanosecond() != 0 {
		return rep, fmt.Errorf("plan %s: not a whole minute", at.UTC().Format(time.RFC3339Nano))
	}
	if !p.now().Before(at) {
		return rep, fmt.Errorf("plan %s: %w", at.UTC().Format(time.RFC3339), ErrPast)
	}
	if l.LastMinute > start && !in.NeverPlanned {
		return rep, fmt.Errorf("plan %s: %w (%s)", at.UTC().Format(time.RFC3339), ErrPlannedAfter,
			time.Unix(l.LastMinute, 0).UTC().Format(time.RFC3339))
	}
	if l.LastMinute == start {
		takeBack(l, start)
	}
	if l.Created == 0 {
		l.Created = start
	}
	rep.First = l.Created == start

	addrs := hashAddresses(in.Servers)
	sh := shareAddresses(in.Servers, addrs, in.Paused)
	hosts := indexHosts(in.Servers, &sh, addrs, l)
	m := matchLedger(start, in.Servers, addrs, hosts, &sh, l)
	sh.adopt(m.out)
	t := terms{created: l.Created, start: start, firstSoon: in.FirstCheckSoon}
	cands, err := m.collectOwed(t, in, hosts, &sh, l, runs{now: p.now().Unix(), live: in.Running}, &rep)
	if err != nil {
		return rep, fmt.Errorf("plan %s: %w", at.UTC().Format(time.RFC3339), err)
	}
	rep.Removed = m.removed
	l.Servers = m.out
	l.Reindex()
	placeAll(start, cands, in.Servers, hosts, &sh, l, &rep)
	sh.mirror(l.Servers)
	pruneHosts(l, start)
	l.LastMinute = max(l.LastMinute, start)
	p.logger().Info("planned", "minute", rep.Minute.Format(time.RFC3339), "checks", len(rep.Checks),
		"new", rep.New, "retry", rep.Retry, "routine", rep.Routine, "deferred", rep.Deferred,
		"longest_wait", rep.Longest, "removed", rep.Removed)
	return rep, nil
}

// addresses holds what each server's address hashes to: the ledger notices
// a new address by its hash, and hosts are told apart by two hashes of
// their name.
type addresses struct {
	urlHash  []uint64
	keyHash  []uint64 // of data.AddressKey: servers at one address share it
	hostName []string // "" for a server without an address
	hostHash []uint64 // two hashes of the host's name per server
}

// hashAddresses hashes every server's address side by side on every core.
// At a million servers a plan is mostly waiting for memory.
func hashAddresses(servers []data.Server) addresses {
	n := len(servers)
	a := addresses{urlHash: make([]uint64, n), keyHash: make([]uint64, n), hostName: make([]string, n), hostHash: make([]uint64, 2*n)}
	inParallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := &servers[i]
			a.urlHash[i] = data.URLHash(s.URL)
			if h := hostOf(s.URL); h != "" {
				a.keyHash[i] = a.urlHash[i] // nearly every address is its own key
				if k := data.AddressKey(s.URL); k != s.URL {
					a.keyHash[i] = data.URLHash(k)
				}
				a.hostName[i] = h
				a.hostHash[2*i], a.hostHash[2*i+1] = data.StableHash(h, 0x686f7374), data.StableHash(h, 0x6e616d65)
			}
		}
	})
	return a
}

// hostIndex is every host of a plan and each server's host.
type hostIndex struct {
	hosts     []*hostWork
	ofServer  []int32 // index in hosts, or noHost, pausedHost
	stretches []int64 // of each host, as hosts[k].stretch, packed for the cores
}

// stretch returns the stretch of a server on host k (see hostStretch); a
// server without a host keeps its tier's pace.
func (x *hostIndex) stretch(k int32) int64 {
	if k >= 0 {
		return x.stretches[k]
	}
	return stretchUnit
}

// indexHosts finds the hosts and their routine demand, which sets their
// stretch (rule S4). Hosts are found by the first hash of their name,
// cheaper than a string map, and told apart by the second, which does not
// touch the other name's memory; a name whose hashes both collide (never
// seen) goes to byName.
func indexHosts(servers []data.Server, sh *sharing, addrs addresses, l *data.Ledger) *hostIndex {
	paused := sh.paused
	x := &hostIndex{ofServer: make([]int32, len(servers))}
	byHash := make(map[uint64]int32, len(l.Hosts)+1024)
	var byName map[string]int32
	var nameCheck []uint64 // second hash of each host's name
	var demand []int64     // routine demand of each host: 24 per hourly server, 1 per daily one
	add := func(h string, check uint64) int32 {
		x.hosts = append(x.hosts, &hostWork{name: h, starts: l.Hosts[h]})
		nameCheck = append(nameCheck, check)
		demand = append(demand, 0)
		return int32(len(x.hosts) - 1)
	}
	for i := range servers {
		s := &servers[i]
		if len(paused) > 0 && paused[s.ID] {
			x.ofServer[i] = pausedHost
			continue
		}
		if sh.follower(i) {
			x.ofServer[i] = followerHost
			continue
		}
		h := addrs.hostName[i]
		if h == "" {
			x.ofServer[i] = noHost
			continue
		}
		hash, check := addrs.hostHash[2*i], addrs.hostHash[2*i+1]
		k, ok := byHash[hash]
		switch {
		case !ok:
			k = add(h, check)
			byHash[hash] = k
		case nameCheck[k] != check:
			if byName == nil {
				byName = map[string]int32{}
			}
			if k, ok = byName[h]; !ok {
				k = add(h, check)
				byName[h] = k
			}
		}
		x.ofServer[i] = k
		if s.Rank >= 1 && s.Rank <= data.HourlyTierMaxRank {
			demand[k] += 24
		} else {
			demand[k]++
		}
	}
	x.stretches = make([]int64, len(x.hosts))
	for k, h := range x.hosts {
		h.stretch = hostStretch(demand[k])
		x.stretches[k] = h.stretch
	}
	return x
}

// matched is the ledger matched to the list: a record for each listed
// server, and the servers whose state must be looked at.
type matched struct {
	out     []data.LedgerServer // the ledger's records, in the list's order
	look    []int32             // servers whose state is looked at
	removed int                 // records of servers no longer listed
}

// matchLedger finds each listed server's record, side by side on every
// core. The ledger keeps the list's order, so while the list is unchanged
// each record is where the server is. A server without a record, or at a
// new address, is a new server.
func matchLedger(start int64, servers []data.Server, addrs addresses, hosts *hostIndex, sh *sharing, l *data.Ledger) matched {
	n := len(servers)
	old := l.Servers
	prev := matchRecords(old, servers)
	m := matched{out: old}
	if len(old) != n || !sequential(prev) {
		m.out = make([]data.LedgerServer, n)
	}
	var mu sync.Mutex
	found := 0
	inParallel(n, func(lo, hi int) {
		var mine []int32
		mineFound := 0
		for i := lo; i < hi; i++ {
			s := &servers[i]
			host := hosts.ofServer[i]
			var e data.LedgerServer
			ok := prev[i] >= 0
			if ok {
				e = old[prev[i]]
				mineFound++
			}
			if !ok || e.URLHash != addrs.urlHash[i] {
				e = data.LedgerServer{ID: s.ID, URLHash: addrs.urlHash[i], FirstSeen: start} // listed, or at a new address: a new server
			}
			e.Rank = int32(s.Rank)
			if host == pausedHost { // rule S8
				e.NextDue, e.Cadence, e.Resume = 0, 0, start+minute
			} else if host == followerHost {
				// its lead's planning is mirrored onto it (sharing.mirror)
			} else if sh.leads(i) || e.Seen == 0 || e.Planned > e.Seen || e.NextDue < start+minute ||
				int64(e.Cadence) != int64(data.Tier(s.Rank)/time.Second)*hosts.stretch(host)/stretchUnit {
				// Most servers are not due and nothing new is known of
				// them: their last result was seen, no check has been
				// planned since (results come only from planned checks),
				// and their cadence is the same. Their due time stands,
				// without a look at their state; the others' is worked
				// out by collectOwed from it. A shared address is always
				// looked at: its servers come and go.
				mine = append(mine, int32(i))
			}
			m.out[i] = e
		}
		mu.Lock()
		m.look = append(m.look, mine...)
		found += mineFound
		mu.Unlock()
	})
	m.removed = len(old) - found
	return m
}

// runs tells which planned checks were lost: see Input.Running.
type runs struct {
	now  int64          // unix s: when the plan is made
	live map[int64]bool // minutes whose run is going
}

// lost reports whether the last check planned of e was lost: its minute
// has begun, no run of it is going, and no result came from it (a result
// starts at its planned second or later, rule S9).
func (r runs) lost(e data.LedgerServer, st data.State, has bool) bool {
	if e.Planned == 0 || has && st.LastCheck.Unix() >= e.Planned {
		return false
	}
	m := e.Planned - e.Planned%minute
	return m <= r.now && !r.live[m]
}

// collectOwed reads the states of the servers looked at, works out their
// due time and returns the checks owed by the end of the minute, side by
// side on every core.
func (m *matched) collectOwed(t terms, in Input, hosts *hostIndex, sh *sharing, l *data.Ledger, r runs, rep *Report) ([]candidate, error) {
	start := t.start
	states := in.States
	if states == nil && in.StatesOf != nil {
		var keep func(id string) bool
		if len(m.look) < len(in.Servers)/4 { // else reading every state costs less than picking
			ids := make(map[string]struct{}, len(m.look))
			for _, i := range m.look {
				ids[in.Servers[i].ID] = struct{}{}
				for _, f := range sh.follows[i] {
					ids[in.Servers[f].ID] = struct{}{}
				}
			}
			keep = func(id string) bool { _, ok := ids[id]; return ok }
		}
		var err error
		if states, err = in.StatesOf(keep); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	var cands []candidate
	var wait waiting
	inParallel(len(m.look), func(lo, hi int) {
		var mine []candidate
		var myWait waiting
		for _, i := range m.look[lo:hi] {
			s := &in.Servers[i]
			host := hosts.ofServer[i]
			e := m.out[i]
			cad := newCadence(sh.slot(int(i), s), s.Rank, hosts.stretch(host))
			st, has := sh.state(states, int(i), in.Servers)
			seen := e
			seen.FirstSeen = sh.firstSeen(m.out, int(i))
			why, due := t.owed(seen, cad, st, has, r.lost(e, st, has))
			if !has && e.Planned == 0 && seen.FirstSeen <= l.Created && due >= start+minute {
				myWait.add(due)
			}
			e.Cadence = int32(cad.every())
			e.NextDue = due
			e.Seen = 0
			if has {
				e.Seen = st.LastCheck.Unix()
			}
			if due < start+minute {
				c := candidate{server: int(i), host: host, class: why, due: due}
				if has {
					c.protocol, c.transport = st.Protocol, st.Transport
				}
				mine = append(mine, c)
			}
			m.out[i] = e
		}
		mu.Lock()
		cands = append(cands, mine...)
		wait.merge(myWait)
		mu.Unlock()
	})
	rep.Waiting = wait.n
	if wait.n > 0 {
		rep.FirstWait, rep.LastWait = time.Unix(wait.first, 0).UTC(), time.Unix(wait.last, 0).UTC()
	}
	return cands, nil
}

// waiting gathers the servers listed at the first plan that wait for the
// slot of their first check.
type waiting struct {
	n           int
	first, last int64 // unix s: the earliest and the latest slot
}

func (w *waiting) add(due int64) {
	if w.n == 0 || due < w.first {
		w.first = due
	}
	w.last = max(w.last, due)
	w.n++
}

func (w *waiting) merge(o waiting) {
	if o.n == 0 {
		return
	}
	if w.n == 0 || o.first < w.first {
		w.first = o.first
	}
	w.last = max(w.last, o.last)
	w.n += o.n
}

// placeAll places the checks owed, in the order of rule S4 (new, then
// retries, then routine by how overdue, then rank), each at the first
// second its host's caps allow, records them in l and rep, and defers
// those that do not fit.
func placeAll(start int64, cands []candidate, servers []data.Server, hosts *hostIndex, sh *sharing, l *data.Ledger, rep *Report) {
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.due, b.due), cmp.Compare(a.server, b.server))
	})
	for _, c := range cands {
		second, ok := max(c.due, start), true
		if c.host >= 0 {
			second, ok = place(hosts.hosts[c.host], start, second, c.class)
		}
		if !ok {
			rep.Deferred++
			rep.Longest = max(rep.Longest, time.Duration(start+minute-c.due)*time.Second)
			continue
		}
		s := servers[c.server]
		e := &l.Servers[c.server]
		e.PrevPlanned, e.PrevReason = e.Planned, e.Reason
		e.Planned, e.Reason, e.NextDue = second, c.class.code(), second
		pc := data.PlannedCheck{
			At: time.Unix(second, 0).UTC(), ID: s.ID, URL: s.URL, Reason: c.class.code().String(),
			Due: time.Unix(c.due, 0).UTC(), Rank: s.Rank,
			Protocol: c.protocol, Transport: c.transport, Also: sh.also(c.server, servers),
		}
		if c.host >= 0 {
			h := hosts.hosts[c.host]
			pc.Host = h.name
			if h.stretch > stretchUnit {
				pc.Every = int64(e.Cadence)
			}
		}
		rep.Checks = append(rep.Checks, pc)
		rep.Longest = max(rep.Longest, time.Duration(second-c.due)*time.Second)
		switch c.class {
		case classNew:
			rep.New++
		case classRetry:
			rep.Retry++
		case classAgain:
			rep.Again++
		default:
			rep.Routine++
		}
	}
	for _, h := range hosts.hosts {
		if h.changed {
			l.Hosts[h.name] = h.starts
		}
	}
	slices.SortFunc(rep.Checks, func(a, b data.PlannedCheck) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ID, b.ID))
	})
}

// inParallel calls f on n items split into one run of neighbours per core
// and waits for all.
func inParallel(n int, f func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { f(n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
}

// matchRecords returns for each listed server the index of its record in
// old, -1 for none. Both are in rank order, so walking them side by side
// finds nearly every record; those whose rank changed are matched by id.
func matchRecords(old []data.LedgerServer, list []data.Server) []int32 {
	prev := make([]int32, len(list))
	var lost []int // list servers not found in place
	loose := map[string]int32{}
	k := 0
	for i, s := range list {
		if k < len(old) && old[k].ID == s.ID { // the usual case: in place
			prev[i] = int32(k)
			k++
			continue
		}
		for k < len(old) && cmp.Or(cmp.Compare(int(old[k].Rank), s.Rank), strings.Compare(old[k].ID, s.ID)) < 0 {
			loose[old[k].ID] = int32(k)
			k++
		}
		if k < len(old) && old[k].ID == s.ID {
			prev[i] = int32(k)
			k++
			continue
		}
		prev[i] = -1
		lost = append(lost, i)
	}
	for ; k < len(old); k++ {
		loose[old[k].ID] = int32(k)
	}
	for _, i := range lost {
		if k, ok := loose[list[i].ID]; ok {
			prev[i] = k
		}
	}
	return prev
}

// sequential reports whether prev maps each server to the record at its own
// index.
func sequential(prev []int32) bool {
	for i, k := range prev {
		if int(k) != i {
			return false
		}
	}
	return true
}

// terms are what the checks owed in a plan are worked out with, the same
// for every server.
type terms struct {
	created   int64 // unix s: the ledger's first minute; servers listed then are not new
	start     int64 // unix s: the minute planned
	firstSoon bool  // Input.FirstCheckSoon
}

// owed returns why and from when a server is owed its next check, as unix
// seconds; a due after the minute planned means nothing is owed in it. A
// lost check (see runs.lost) is owed again from its planned second, with
// its reason: ahead of routine checks, behind new ones and retries (rule
// S4).
func (t terms) owed(e data.LedgerServer, cad cadence, st data.State, has, lost bool) (why class, due int64) {
	gap := int64(data.RetryAfterFailure / time.Second)
	last := e.Planned
	var lastCheck int64
	if has {
		lastCheck = st.LastCheck.Unix()
		last = max(last, lastCheck)
	}
	switch {
	case lost:
		why, due = classAgain, e.Planned
		switch e.Reason {
		case data.CodeNew:
			why = classNew
		case data.CodeRetry:
			why = classRetry
		}
	case !has && e.Planned == 0:
		switch {
		case e.FirstSeen > t.created: // rule S5
			why, due = classNew, e.FirstSeen
		case t.firstSoon: // listed at the first plan: as soon as the caps allow
			why, due = classRoutine, e.FirstSeen
		default: // listed at the first plan: at its slot
			why, due = classRoutine, cad.next(e.FirstSeen)
		}
	case !has:
		// Planned, no result yet: still running, or lost. A lost first
		// check is planned again once it should long have finished.
		if e.Reason == data.CodeNew && e.Planned+int64(data.NewServerTarget/time.Second) <= t.start {
			why, due = classNew, e.Planned+int64(data.NewServerTarget/time.Second)
		} else {
			why, due = classRoutine, cad.next(e.Planned+gap)
		}
	case st.LastStatus == data.Failing && st.EverAnswered() && e.Planned <= lastCheck &&
		lastCheck+gap < st.FailingSince.Unix()+int64(data.RetryWindow/time.Second):
		why, due = classRetry, lastCheck+gap // rule S6; rule S7 keeps never-answered servers out
	default:
		why, due = classRoutine, cad.next(last+gap)
	}
	if due < e.Resume { // paused until then: owed nothing from before
		if why == classRoutine || why == classAgain {
			why, due = classRoutine, cad.next(e.Resume)
		} else {
			due = e.Resume
		}
	}
	if has && !st.RetryAfter.IsZero() {
		// Retry-After: not before it, but never later than the usual pace.
		hold := min(ceilSecond(st.RetryAfter), lastCheck+cad.every())
		due = max(due, hold)
	}
	return why, due
}

func ceilSecond(t time.Time) int64 {
	u := t.Unix()
	if t.Nanosecond() > 0 {
		u++
	}
	return u
}

// place finds the first second from from on in the minute starting at
// start where a check of host h of class why keeps the caps of rule S3 (and
// for a new server's first check, the spacing of rule S5), records it, and
// returns it. Routine checks leave the top NewReserve of the hourly cap to
// new servers, retries half of it, so that a new server on a host at its
// cap is still checked within minutes.
func place(h *hostWork, start, from int64, why class) (int64, bool) {
	spacing := int64(data.NewServerSpacing / time.Second)
	isNew := why == classNew
	perHour := data.HostMaxPerHour
	switch why {
	case classRetry:
		perHour -= NewReserve / 2
	case classAgain, classRoutine:
		perHour -= NewReserve
	}
	for second := from; second < start+minute; second++ {
		if h.used&(1<<(second-start)) != 0 {
			continue
		}
		// Every window of 60 min or 24 h that holds second starts after
		// second-3600 (second-86400) and no start is planned after this
		// minute, so counting from there bounds them all.
		if len(h.starts)-lowerBound(h.starts, second-int64(time.Hour/time.Second)+1) >= perHour ||
			len(h.starts)-lowerBound(h.starts, second-int64(24*time.Hour/time.Second)+1) >= data.HostMaxPerDay {
			continue
		}
		if isNew && newNear(h.starts, second, spacing) {
			continue
		}
		i := lowerBound(h.starts, second)
		h.starts = slices.Insert(slices.Clip(h.starts), i, data.MakeHostStart(second, isNew))
		h.used |= 1 << (second - start)
		h.changed = true
		return second, true
	}
	return 0, false
}

// newNear reports whether a new server's first check starts on the host
// less than spacing seconds from x.
func newNear(starts []data.HostStart, x, spacing int64) bool {
	for i := lowerBound(starts, x-spacing+1); i < len(starts) && starts[i].Unix() < x+spacing; i++ {
		if starts[i].New() {
			return true
		}
	}
	return false
}

// lowerBound returns the index of the first start at or after unix second u.
func lowerBound(starts []data.HostStart, u int64) int {
	v := data.MakeHostStart(u, false)
	return sort.Search(len(starts), func(i int) bool { return starts[i] >= v })
}

// takeBack undoes what planning the minute starting at start recorded, so
// it can be planned again: it is the ledger's last minute.
func takeBack(l *data.Ledger, start int64) {
	for h, starts := range l.Hosts {
		if i := lowerBound(starts, start); i < len(starts) {
			l.Hosts[h] = slices.Clip(starts[:i])
		}
	}
	for i := range l.Servers {
		if s := &l.Servers[i]; s.Planned >= start {
			s.Planned, s.Reason = s.PrevPlanned, s.PrevReason
		}
	}
}

// pruneHosts forgets starts that no window holding the minute starting at
// start, or a later one, can contain.
func pruneHosts(l *data.Ledger, start int64) {
	keep := start - int64(24*time.Hour/time.Second) + 1
	for h, starts := range l.Hosts {
		i := lowerBound(starts, keep)
		switch {
		case i == len(starts):
			delete(l.Hosts, h)
		case i > 0:
			l.Hosts[h] = slices.Clone(starts[i:])
		}
	}
}
