package planner

import (
	"cmp"
	"errors"
	"fmt"
	"io"
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
}

// Report is one planned minute.
type Report struct {
	Minute   time.Time           // start of the minute planned
	Checks   []data.PlannedCheck // by start, then id
	New      int                 // checks of each reason
	Retry    int
	Routine  int
	Deferred int           // checks due by the end of the minute that the host caps push to a later one (rule S4)
	Longest  time.Duration // longest wait of a deferred check so far
	Removed  int           // servers dropped from the ledger: no longer listed
}

func (p *Planner) now() time.Time {
	if p.Now == nil {
		return time.Now()
	}
	return p.Now()
}

func (p *Planner) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return p.Logger
}

// candidate is a check owed by the end of the minute being planned.
type candidate struct {
	server int // index in Input.Servers: rank order, ties by id
	host   int32
	class  int8 // 0 new, 1 retry, 2 routine: the order of rule S4
	due    int64
	// learned by earlier checks of this address, for the runner (rule N4)
	protocol, transport string
}

var (
	reasonOfClass = [...]string{data.ReasonNew, data.ReasonRetry, data.ReasonRoutine}
	codeOfClass   = [...]data.ReasonCode{data.CodeNew, data.CodeRetry, data.CodeRoutine}
)

// hostWork is one host during a plan: its demand, stretch, and the starts
// counted toward its caps (rule S3).
type hostWork struct {
	name     string
	demand24 int64 // routine demand: 24 per hourly server, 1 per daily one
	stretch  int64 // eighths (see hostStretch)
	used     uint64
	starts   []data.HostStart
	changed  bool
}

// Plan plans the minute starting at at (a whole minute, after Now) and
// records it in the ledger l. Planning the last minute of the ledger again
// first takes back what that plan recorded, so the same inputs give the same
// plan. A minute before the ledger's last one is ErrPlannedAfter; a minute
// that has begun is ErrPast. l is unchanged on error, but for an error of
// in.StatesOf, after which l is to be read again.
func (p *Planner) Plan(at time.Time, in Input, l *data.Ledger) (Report, error) {
	T := at.Unix()
	rep := Report{Minute: at.UTC()}
	if T%minute != 0 || at.Nanosecond() != 0 {
		return rep, fmt.Errorf("plan %s: not a whole minute", at.UTC().Format(time.RFC3339Nano))
	}
	if !p.now().Before(at) {
		return rep, fmt.Errorf("plan %s: %w", at.UTC().Format(time.RFC3339), ErrPast)
	}
	if l.LastMinute > T {
		return rep, fmt.Errorf("plan %s: %w (%s)", at.UTC().Format(time.RFC3339), ErrPlannedAfter,
			time.Unix(l.LastMinute, 0).UTC().Format(time.RFC3339))
	}
	if l.LastMinute == T {
		takeBack(l, T)
	}
	if l.Created == 0 {
		l.Created = T
	}

	// Each server's address: its hash (the ledger notices a new address by
	// it) and its host's name and two hashes of it, side by side on every
	// core. At a million servers a plan is mostly waiting for memory.
	n := len(in.Servers)
	urlHash := make([]uint64, n)
	hostName := make([]string, n)
	hostHash := make([]uint64, 2*n) // two hashes of the host's name per server
	inParallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := &in.Servers[i]
			urlHash[i] = data.URLHash(s.URL)
			if h := hostOf(s.URL); h != "" {
				hostName[i] = h
				hostHash[2*i], hostHash[2*i+1] = data.StableHash(h, 0x686f7374), data.StableHash(h, 0x6e616d65)
			}
		}
	})

	// Hosts and their routine demand, which sets their stretch (rule S4).
	// Hosts are found by the first hash of their name, cheaper than a
	// string map, and told apart by the second, which does not touch the
	// other name's memory; a name whose hashes both collide (never seen)
	// goes to byName.
	hostIdx := make(map[uint64]int32, len(l.Hosts)+1024)
	var byName map[string]int32
	var hosts []*hostWork
	var hostCheck []uint64 // second hash of each host's name
	var demand []int64     // routine demand of each host: 24 per hourly server, 1 per daily one
	hostOfServer := make([]int32, n)
	newHost := func(h string, check uint64) int32 {
		hosts = append(hosts, &hostWork{name: h, starts: l.Hosts[h]})
		hostCheck = append(hostCheck, check)
		demand = append(demand, 0)
		return int32(len(hosts) - 1)
	}
	for i := range in.Servers {
		s := &in.Servers[i]
		if len(in.Paused) > 0 && in.Paused[s.ID] {
			hostOfServer[i] = -2 // rule S8: not planned, not counted
			continue
		}
		h := hostName[i]
		if h == "" {
			hostOfServer[i] = -1 // no address: the check concludes not_checkable without a connection
			continue
		}
		hh, check := hostHash[2*i], hostHash[2*i+1]
		k, ok := hostIdx[hh]
		switch {
		case !ok:
			k = newHost(h, check)
			hostIdx[hh] = k
		case hostCheck[k] != check:
			if byName == nil {
				byName = map[string]int32{}
			}
			if k, ok = byName[h]; !ok {
				k = newHost(h, check)
				byName[h] = k
			}
		}
		hostOfServer[i] = k
		if s.Rank >= 1 && s.Rank <= data.HourlyTierMaxRank {
			demand[k] += 24
		} else {
			demand[k]++
		}
	}
	stretches := make([]int64, len(hosts))
	for k, h := range hosts {
		h.stretch = hostStretch(demand[k])
		stretches[k] = h.stretch
	}

	// What each server is owed, side by side on every core. The ledger
	// keeps the list's order, so while the list is unchanged each record
	// is where the server is.
	old := l.Servers
	prev := matchRecords(old, in.Servers)
	out := old
	if len(old) != n || !sequential(prev) {
		out = make([]data.LedgerServer, n)
	}
	var mu sync.Mutex
	matched := 0
	var look []int32 // servers whose state is looked at
	inParallel(n, func(lo, hi int) {
		var mine []int32
		found := 0
		for i := lo; i < hi; i++ {
			s := &in.Servers[i]
			hk := hostOfServer[i]
			uh := urlHash[i]
			var e data.LedgerServer
			ok := prev[i] >= 0
			if ok {
				e = old[prev[i]]
				found++
			}
			if !ok || e.URLHash != uh {
				e = data.LedgerServer{ID: s.ID, URLHash: uh, FirstSeen: T} // listed, or at a new address: a new server
			}
			e.Rank = int32(s.Rank)
			if hk == -2 { // rule S8
				e.NextDue, e.Cadence, e.Resume = 0, 0, T+minute
			} else if e.Seen == 0 || e.Planned > e.Seen || e.NextDue < T+minute ||
				int64(e.Cadence) != int64(data.Tier(s.Rank)/time.Second)*serverStretch(stretches, hk)/stretchUnit {
				// Most servers are not due and nothing new is known of
				// them: their last result was seen, no check has been
				// planned since (results come only from planned checks),
				// and their cadence is the same. Their due time stands,
				// without a look at their state; the others' is worked
				// out below from it.
				mine = append(mine, int32(i))
			}
			out[i] = e
		}
		mu.Lock()
		look = append(look, mine...)
		matched += found
		mu.Unlock()
	})
	states := in.States
	if states == nil && in.StatesOf != nil {
		var keep func(id string) bool
		if len(look) < n/4 { // else reading every state costs less than picking
			ids := make(map[string]struct{}, len(look))
			for _, i := range look {
				ids[in.Servers[i].ID] = struct{}{}
			}
			keep = func(id string) bool { _, ok := ids[id]; return ok }
		}
		var err error
		if states, err = in.StatesOf(keep); err != nil {
			return rep, fmt.Errorf("plan %s: %w", at.UTC().Format(time.RFC3339), err)
		}
	}
	var cands []candidate
	inParallel(len(look), func(lo, hi int) {
		var mine []candidate
		for _, i := range look[lo:hi] {
			s := &in.Servers[i]
			hk := hostOfServer[i]
			e := out[i]
			cad := newCadence(s.ID, s.Rank, serverStretch(stretches, hk))
			st, has := states[s.ID]
			has = has && st.URL == s.URL
			class, due := owed(l.Created, e, cad, st, has, T)
			e.Cadence = int32(cad.every())
			e.NextDue = due
			e.Seen = 0
			if has {
				e.Seen = st.LastCheck.Unix()
			}
			if due < T+minute {
				c := candidate{server: int(i), host: hk, class: class, due: due}
				if has {
					c.protocol, c.transport = st.Protocol, st.Transport
				}
				mine = append(mine, c)
			}
			out[i] = e
		}
		mu.Lock()
		cands = append(cands, mine...)
		mu.Unlock()
	})
	rep.Removed = len(old) - matched
	l.Servers = out
	l.Reindex()

	// Rule S4: new, then retries, then routine by how overdue, then rank.
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.due, b.due), cmp.Compare(a.server, b.server))
	})
	for _, c := range cands {
		x, ok := T, true
		if c.host >= 0 {
			x, ok = place(hosts[c.host], T, max(c.due, T), c.class)
		} else {
			x = max(c.due, T)
		}
		s := in.Servers[c.server]
		if !ok {
			rep.Deferred++
			rep.Longest = max(rep.Longest, time.Duration(T+minute-c.due)*time.Second)
			continue
		}
		e := &l.Servers[c.server]
		e.PrevPlanned, e.PrevReason = e.Planned, e.Reason
		e.Planned, e.Reason, e.NextDue = x, codeOfClass[c.class], x
		pc := data.PlannedCheck{
			At: time.Unix(x, 0).UTC(), ID: s.ID, URL: s.URL, Reason: reasonOfClass[c.class],
			Due: time.Unix(c.due, 0).UTC(), Rank: s.Rank,
		}
		if c.host >= 0 {
			pc.Host = hosts[c.host].name
			if hosts[c.host].stretch > stretchUnit {
				pc.Every = int64(e.Cadence)
			}
		}
		pc.Protocol, pc.Transport = c.protocol, c.transport
		rep.Checks = append(rep.Checks, pc)
		rep.Longest = max(rep.Longest, time.Duration(x-c.due)*time.Second)
		switch c.class {
		case 0:
			rep.New++
		case 1:
			rep.Retry++
		default:
			rep.Routine++
		}
	}
	for _, h := range hosts {
		if h.changed {
			l.Hosts[h.name] = h.starts
		}
	}
	pruneHosts(l, T)
	l.LastMinute = T
	slices.SortFunc(rep.Checks, func(a, b data.PlannedCheck) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ID, b.ID))
	})
	p.logger().Info("planned", "minute", rep.Minute.Format(time.RFC3339), "checks", len(rep.Checks),
		"new", rep.New, "retry", rep.Retry, "routine", rep.Routine, "deferred", rep.Deferred,
		"longest_wait", rep.Longest, "removed", rep.Removed)
	return rep, nil
}

// serverStretch returns the stretch of a server on host hk (see
// hostStretch); a server without a host keeps its tier's pace.
func serverStretch(stretches []int64, hk int32) int64 {
	if hk >= 0 {
		return stretches[hk]
	}
	return stretchUnit
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

// owed returns why and from when a server is owed its next check, as unix
// seconds; a due after the minute means nothing is owed in it.
func owed(created int64, e data.LedgerServer, cad cadence, st data.State, has bool, T int64) (class int8, due int64) {
	gap := int64(data.RetryAfterFailure / time.Second)
	last := e.Planned
	var lastCheck int64
	if has {
		lastCheck = st.LastCheck.Unix()
		last = max(last, lastCheck)
	}
	switch {
	case !has && e.Planned == 0:
		if e.FirstSeen > created { // rule S5; servers listed at the first plan wait for their slot
			class, due = 0, e.FirstSeen
		} else {
			class, due = 2, cad.next(e.FirstSeen)
		}
	case !has:
		// Planned, no result yet: still running, or lost. A lost first
		// check is planned again once it should long have finished.
		if e.Reason == data.CodeNew && e.Planned+int64(data.NewServerTarget/time.Second) <= T {
			class, due = 0, e.Planned+int64(data.NewServerTarget/time.Second)
		} else {
			class, due = 2, cad.next(e.Planned+gap)
		}
	case st.LastStatus == data.Failing && st.EverAnswered() && e.Planned <= lastCheck &&
		lastCheck+gap < st.FailingSince.Unix()+int64(data.RetryWindow/time.Second):
		class, due = 1, lastCheck+gap // rule S6; rule S7 keeps never-answered servers out
	default:
		class, due = 2, cad.next(last+gap)
	}
	if due < e.Resume { // paused until then: owed nothing from before
		if class == 2 {
			due = cad.next(e.Resume)
		} else {
			due = e.Resume
		}
	}
	if has && !st.RetryAfter.IsZero() {
		// Retry-After: not before it, but never later than the usual pace.
		hold := min(ceilSecond(st.RetryAfter), lastCheck+cad.every())
		due = max(due, hold)
	}
	return class, due
}

func ceilSecond(t time.Time) int64 {
	u := t.Unix()
	if t.Nanosecond() > 0 {
		u++
	}
	return u
}

// place finds the first second from from on in the minute starting at T
// where a check of host h of the given class keeps the caps of rule S3 (and
// for a new server's first check, the spacing of rule S5), records it, and
// returns it. Routine checks leave the top NewReserve of the hourly cap to
// new servers, retries half of it, so that a new server on a host at its
// cap is still checked within minutes.
func place(h *hostWork, T, from int64, class int8) (int64, bool) {
	spacing := int64(data.NewServerSpacing / time.Second)
	isNew := class == 0
	perHour := [...]int{data.HostMaxPerHour, data.HostMaxPerHour - NewReserve/2, data.HostMaxPerHour - NewReserve}[class]
	for x := from; x < T+minute; x++ {
		if h.used&(1<<(x-T)) != 0 {
			continue
		}
		// Every window of 60 min or 24 h that holds x starts after
		// x-3600 (x-86400) and no start is planned after this minute, so
		// counting from there bounds them all.
		if len(h.starts)-lowerBound(h.starts, x-int64(time.Hour/time.Second)+1) >= perHour ||
			len(h.starts)-lowerBound(h.starts, x-int64(24*time.Hour/time.Second)+1) >= data.HostMaxPerDay {
			continue
		}
		if isNew && newNear(h.starts, x, spacing) {
			continue
		}
		i := lowerBound(h.starts, x)
		h.starts = slices.Insert(slices.Clip(h.starts), i, data.MakeHostStart(x, isNew))
		h.used |= 1 << (x - T)
		h.changed = true
		return x, true
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

// takeBack undoes what planning minute T recorded, so it can be planned
// again: it is the ledger's last minute.
func takeBack(l *data.Ledger, T int64) {
	for h, starts := range l.Hosts {
		if i := lowerBound(starts, T); i < len(starts) {
			l.Hosts[h] = slices.Clip(starts[:i])
		}
	}
	for i := range l.Servers {
		if s := &l.Servers[i]; s.Planned >= T {
			s.Planned, s.Reason = s.PrevPlanned, s.PrevReason
		}
	}
}

// pruneHosts forgets starts that no window holding minute T or later can
// contain.
func pruneHosts(l *data.Ledger, T int64) {
	keep := T - int64(24*time.Hour/time.Second) + 1
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
