package sim

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// maxExamples is how many broken checks the audit keeps word for word.
const maxExamples = 20

const minute = 60 // seconds

// Audit checks every scheduling rule over the plans of a simulation, minute
// by minute, and gathers the figures of its report. It trusts nothing the
// planner computed except the ledger's effective cadence and first due time,
// which it holds the planner to.
type Audit struct {
	Start time.Time // first minute planned
	End   time.Time // end of the last minute planned

	Broken   map[string]int // rule id -> broken checks
	Examples []string       // the first broken checks, in words

	hosts     map[string]*hostAudit
	servers   map[string]*serverAudit
	addrs     map[string]*addrAudit // by data.AddressKey
	list      []data.Server         // the list of the last plan, to notice changes
	paused    map[string]bool       // the paused servers of the last plan
	minuteNew map[string][]int64    // new servers' first checks in the minute audited, by host

	checks    int
	shared    int // checks for more than one server (issue 14 point 5)
	served    int // results those checks gave the servers besides the one named first
	byReason  map[string]int
	newDelay  []int64 // seconds from the first plan that listed a new server to its first check
	retryGap  []int64 // seconds from a failing check to its retry
	deferred  int
	longest   int64 // seconds: longest wait past due
	listedAll int   // servers ever listed
}

type hostAudit struct {
	starts                  []int64 // unix s, ascending; pruned to the last 24 h
	maxSec, maxHour, maxDay int
	lastNew                 int64
	newStarts               []int64                 // starts of new servers' first checks
	capHits                 []int64                 // starts that filled the host's hourly cap
	waiting                 map[string]*serverAudit // new servers not yet checked
}

// addrAudit is one address (data.AddressKey) as the audit finds it in the
// list: the servers listed at it, which one check serves (issue 14 point 5).
type addrAudit struct {
	ids     []string   // listed at it now, in rank order
	rank    int        // the best rank among them: the address's cadence (rule S1)
	shared  bool       // listed more than once at some time of the run
	checked bool       // checked at some time of the run
	state   data.State // its results, applied as the store does (URL: the key)
}

type serverAudit struct {
	id, url    string
	key        string // data.AddressKey(url)
	joined     bool   // listed at an address already checked: not new (rule S5), it waits for the address's next check
	rank       int
	groupRank  int // the best rank at its address: its cadence (rule S1)
	host       string
	listedAt   int64 // start of the first minute planned with it at this address
	bootstrap  bool  // listed at the first plan: not new
	removed    bool
	tierMoved  bool  // its rank moved it to the other tier during the run
	together   bool  // listed with others at its address: checked at the address's slot, not its own (rule S2)
	slotMoved  int64 // start of the first minute planned after its slot last moved (its address came to be shared or to stand alone), 0 none
	everPaused bool
	cadence    int64 // effective cadence, seconds
	stretched  bool
	first      int64 // first check at this address, 0 none
	last       int64
	checks     int
	routine    int
	state      data.State // results at this address, applied as the store does
}

// NewAudit returns an audit of a simulation starting at start.
func NewAudit(start time.Time) *Audit {
	return &Audit{
		Start: start, End: start, Broken: map[string]int{}, byReason: map[string]int{},
		hosts: map[string]*hostAudit{}, servers: map[string]*serverAudit{}, addrs: map[string]*addrAudit{}, minuteNew: map[string][]int64{},
	}
}

func (a *Audit) broke(rule, format string, args ...any) {
	a.Broken[rule]++
	if len(a.Examples) < maxExamples {
		a.Examples = append(a.Examples, rule+": "+fmt.Sprintf(format, args...))
	}
}

// OK reports whether no rule was broken so far.
func (a *Audit) OK() bool { return len(a.Broken) == 0 }

// Plan audits one planned minute: now is when it was planned, list and
// paused what it was planned from, l the ledger after it.
func (a *Audit) Plan(now time.Time, list []data.Server, paused map[string]bool, rep planner.Report, l *spool.Ledger) {
	T := rep.Minute.Unix()
	a.End = rep.Minute.Add(time.Minute)
	if len(list) != len(a.list) || len(list) > 0 && &list[0] != &a.list[0] {
		a.relist(T, list)
	}
	a.paused = paused
	clear(a.minuteNew)
	for _, c := range rep.Checks {
		if c.Reason == data.ReasonNew {
			a.minuteNew[c.Host] = append(a.minuteNew[c.Host], c.At.Unix())
		}
	}
	for id := range paused {
		if sa := a.servers[id]; sa != nil {
			sa.everPaused = true
			for _, o := range a.addrs[sa.key].ids { // a paused address pauses all its servers
				a.servers[o].everPaused = true
			}
		}
	}
	for _, c := range rep.Checks {
		a.check(now, T, c)
	}
}

// relist notes servers added, removed or moved to another address, walking
// the old and the new list side by side in their rank order.
func (a *Audit) relist(T int64, list []data.Server) {
	old := a.list
	a.list = list
	less := func(x, y data.Server) int { return cmp.Or(cmp.Compare(x.Rank, y.Rank), strings.Compare(x.ID, y.ID)) }
	came := map[string]bool{}
	var gone []string
	i, j := 0, 0
	for i < len(old) || j < len(list) {
		c := 0
		switch {
		case i == len(old):
			c = 1
		case j == len(list):
			c = -1
		default:
			c = less(old[i], list[j])
		}
		if c < 0 {
			gone = append(gone, old[i].ID)
			i++
			continue
		}
		if c > 0 || old[i].URL != list[j].URL {
			came[list[j].ID] = true
			s := list[j]
			sa := a.servers[s.ID]
			if sa == nil || sa.url != s.URL || sa.removed {
				sa = &serverAudit{id: s.ID, url: s.URL, key: data.AddressKey(s.URL), host: data.HostOf(s.URL), listedAt: T, bootstrap: T == a.Start.Unix()}
				a.servers[s.ID] = sa
				a.listedAll++
				if ad := a.addrs[sa.key]; s.URL != "" && ad != nil && ad.checked {
					sa.joined = true
				}
				if !sa.bootstrap && !sa.joined && sa.host != "" {
					h := a.host(sa.host)
					if h.waiting == nil {
						h.waiting = map[string]*serverAudit{}
					}
					h.waiting[s.ID] = sa
				}
			}
			if sa.rank != 0 && data.Tier(sa.rank) != data.Tier(s.Rank) {
				sa.tierMoved = true
			}
			sa.rank = s.Rank
			sa.cadence = int64(data.Tier(s.Rank) / time.Second)
		}
		if c == 0 {
			i++
		}
		j++
	}
	for _, id := range gone {
		if !came[id] {
			a.servers[id].removed = true
		}
	}
	a.share(T, list)
}

// share finds the servers listed at each address, as the audit reads the
// list, not as the planner grouped them.
func (a *Audit) share(T int64, list []data.Server) {
	for _, ad := range a.addrs {
		ad.ids = ad.ids[:0]
	}
	for _, s := range list {
		if s.URL == "" {
			continue
		}
		sa := a.servers[s.ID]
		ad := a.addrs[sa.key]
		if ad == nil {
			ad = &addrAudit{}
			a.addrs[sa.key] = ad
		}
		if len(ad.ids) == 0 {
			ad.rank = s.Rank // the list is in rank order: the first is the best
		}
		ad.ids = append(ad.ids, s.ID)
		ad.shared = ad.shared || len(ad.ids) > 1
	}
	for _, s := range list {
		if sa := a.servers[s.ID]; s.URL != "" {
			ad := a.addrs[sa.key]
			if sa.groupRank != 0 && data.Tier(sa.groupRank) != data.Tier(ad.rank) {
				sa.tierMoved = true
			}
			if together := len(ad.ids) > 1; together != sa.together {
				if sa.listedAt < T {
					sa.slotMoved = T
				}
				sa.together = together
			}
			sa.groupRank = ad.rank
		} else {
			sa.groupRank = s.Rank
		}
	}
}

// check audits one planned check: once for the wire (rules S3, S9 and the
// address's slot and cadence), then for each server it is for.
func (a *Audit) check(now time.Time, T int64, c data.PlannedCheck) {
	a.checks++
	a.byReason[c.Reason]++
	x, due := c.At.Unix(), c.Due.Unix()
	listings := append([]data.Listing{{ID: c.ID, URL: c.URL}}, c.Also...)
	if len(c.Also) > 0 {
		a.shared++
		a.served += len(c.Also)
	}
	for _, o := range listings {
		if sa := a.servers[o.ID]; sa == nil || sa.removed || sa.url != o.URL {
			a.broke("listed", "%s planned at %s but not listed at %s", o.ID, c.At.Format(time.RFC3339), o.URL)
			return
		}
		if a.paused[o.ID] {
			a.broke("S8", "%s planned at %s while paused", o.ID, c.At.Format(time.RFC3339))
		}
	}
	lead := a.servers[c.ID]
	ad := a.addrs[lead.key]
	if ad != nil {
		for _, id := range ad.ids {
			if a.paused[id] && id != c.ID {
				a.broke("S8", "%s planned at %s while %s, at the same address, is paused", c.ID, c.At.Format(time.RFC3339), id)
			}
		}
	}
	if ad != nil && len(ad.ids) <= spool.MaxShared {
		var ids []string
		for _, o := range listings {
			ids = append(ids, o.ID)
		}
		if !slices.Equal(ids, ad.ids) {
			a.broke("shared", "%s planned at %s for %v, but %v are listed at %s: one check for all, the best ranked first",
				c.ID, c.At.Format(time.RFC3339), ids, ad.ids, lead.key)
		}
	}
	if c.At.Nanosecond() != 0 || x < T || x >= T+minute || !c.At.After(now) || x < due {
		a.broke("S9", "%s planned at %s: not a whole second of minute %s after the plan at %s and due %s",
			c.ID, c.At.Format(time.RFC3339Nano), time.Unix(T, 0).UTC().Format("15:04"), now.Format("15:04:05"), c.Due.Format(time.RFC3339))
	}
	cadence := int64(data.Tier(lead.groupRank) / time.Second)
	if c.Every > 0 {
		cadence = c.Every // the plan says the host's caps stretch it
	}
	a.hostCaps(c, x)
	// The address's results tell what its servers learned (rules S6, S7):
	// a server listed later at it holds only those since.
	st := lead.state
	if ad != nil {
		st = ad.state
		st.URL = c.URL
		ad.checked = true
	}
	answeredBefore := st.EverAnswered()
	gap := int64(data.RetryAfterFailure / time.Second)
	switch c.Reason {
	case data.ReasonRetry:
		last := st.LastCheck.Unix()
		switch {
		case st.LastCheck.IsZero() || st.LastStatus != data.Failing:
			a.broke("S6", "%s retried at %s without a failing check before", c.ID, c.At.Format(time.RFC3339))
		case !answeredBefore:
			a.broke("S7", "%s never answered but retried at %s", c.ID, c.At.Format(time.RFC3339))
		case x < last+gap || last+gap >= st.FailingSince.Unix()+int64(data.RetryWindow/time.Second):
			a.broke("S6", "%s retried at %s: last check %s, failing since %s", c.ID, c.At.Format(time.RFC3339),
				st.LastCheck.Format(time.RFC3339), st.FailingSince.Format(time.RFC3339))
		default:
			a.retryGap = append(a.retryGap, x-last)
		}
	case data.ReasonRoutine:
		// A shared address is due at its own slot; one that became or
		// stopped being shared during the run may still be due once at its
		// lead's.
		tier := int64(data.Tier(lead.groupRank) / time.Second)
		onSlot := func(slot time.Duration) bool { return floorMod(due-int64(slot/time.Second), tier) == 0 }
		shared := len(c.Also) > 0
		if ad != nil && ad.shared {
			shared = true
		}
		if st.RetryAfter.IsZero() && !(len(c.Also) == 0 && onSlot(planner.SlotOf(c.ID)) ||
			shared && (onSlot(planner.SlotOf(c.ID)) || onSlot(planner.SlotOfAddress(c.URL)))) {
			a.broke("S2", "%s due at %s, not at its slot %s", c.ID, c.Due.Format(time.RFC3339), planner.SlotOf(c.ID))
		}
	case data.ReasonNew:
	default:
		a.broke("S4", "%s planned for an unknown reason %q", c.ID, c.Reason)
	}
	if !st.RetryAfter.IsZero() {
		hold := min(st.RetryAfter.Add(time.Second-1).Truncate(time.Second).Unix(), st.LastCheck.Unix()+cadence)
		if x < hold {
			a.broke("RetryAfter", "%s checked at %s, before its Retry-After %s", c.ID, c.At.Format(time.RFC3339), st.RetryAfter.Format(time.RFC3339))
		}
	}
	if x/minute > due/minute {
		a.deferred++
	}
	a.longest = max(a.longest, x-due)
	// A server whose slot moved (its address came to be shared or to stand
	// alone)
	// is due at its new slot's first time after its last check, which may
	// lie before the move: it has waited only since the plan that saw the
	// move.
	if owed := max(due, lead.slotMoved); cadence > 0 && x-owed > cadence {
		a.broke("S4", "%s waited %s past due, longer than its cadence %s", c.ID, time.Duration(x-owed)*time.Second, time.Duration(cadence)*time.Second)
	}
	for _, o := range listings {
		a.listing(c, a.servers[o.ID], x, cadence)
	}
}

// listing audits a check for one of the servers it is for: rules S5 and S7
// of that server.
func (a *Audit) listing(c data.PlannedCheck, sa *serverAudit, x, cadence int64) {
	sa.cadence = cadence
	sa.stretched = c.Every > 0
	gap := int64(data.RetryAfterFailure / time.Second)
	switch c.Reason {
	case data.ReasonNew:
		if sa.first != 0 {
			a.broke("S5", "%s planned as new at %s but already checked at this address", sa.id, c.At.Format(time.RFC3339))
		}
		if sa.bootstrap || sa.joined {
			break
		}
		delay := x - sa.listedAt
		a.newDelay = append(a.newDelay, delay)
		h := a.hosts[sa.host]
		ahead := 0
		if h != nil {
			ahead = len(h.newStarts) - sort.Search(len(h.newStarts), func(i int) bool { return h.newStarts[i] >= sa.listedAt }) - 1
		}
		// Later than the target is allowed only behind other new servers
		// (30 s apart) or while the host was at its hourly cap (rule S3
		// first); that nothing else went ahead of it is checked below.
		full := h != nil && len(h.capHits) > 0 && h.capHits[len(h.capHits)-1] >= sa.listedAt-3600
		if limit := int64(data.NewServerTarget/time.Second) + int64(ahead)*int64(data.NewServerSpacing/time.Second); delay > limit && !full && !sa.everPaused {
			a.broke("S5", "%s first checked %s after it was listed, %d new servers of its host ahead of it",
				sa.id, time.Duration(delay)*time.Second, ahead)
		}
	case data.ReasonRetry:
		a.newFirst(c, x)
	case data.ReasonRoutine:
		a.newFirst(c, x)
		sa.routine++
		if sa.first == 0 && !sa.bootstrap && !sa.joined {
			a.broke("S5", "%s listed at %s was first checked as routine, not new", sa.id, time.Unix(sa.listedAt, 0).UTC().Format(time.RFC3339))
		}
	}
	if c.Reason != data.ReasonNew && sa.last != 0 && x-sa.last < gap {
		a.broke("S7", "%s checked at %s, only %s after its last check", sa.id, c.At.Format(time.RFC3339), time.Duration(x-sa.last)*time.Second)
	}
	if sa.first == 0 {
		sa.first = x
	}
	sa.last = x
	sa.checks++
}

// newFirst checks that no retry or routine check of a host goes ahead of a
// new server of that host still waiting for its first check (rules S4 and
// S5), unless the 30 s spacing of new servers kept that one out.
func (a *Audit) newFirst(c data.PlannedCheck, x int64) {
	h := a.hosts[c.Host]
	if h == nil || len(h.waiting) == 0 {
		return
	}
	spacing := int64(data.NewServerSpacing / time.Second)
	for id, n := range h.waiting {
		if n.removed || n.first != 0 || a.servers[id] != n {
			delete(h.waiting, id)
			continue
		}
		if a.pausedAt(n) || x < n.listedAt {
			continue
		}
		near := h.lastNew != 0 && x-h.lastNew < spacing
		for _, y := range a.minuteNew[c.Host] {
			near = near || (y > x-spacing && y < x+spacing)
		}
		if !near {
			a.broke("S5", "%s (%s) planned at %s while new server %s of its host waits since %s",
				c.ID, c.Reason, c.At.Format(time.RFC3339), id, time.Unix(n.listedAt, 0).UTC().Format(time.RFC3339))
		}
	}
}

// pausedAt reports whether sa or another server at its address is paused:
// the address is then not checked (rule S8).
func (a *Audit) pausedAt(sa *serverAudit) bool {
	if a.paused[sa.id] {
		return true
	}
	if ad := a.addrs[sa.key]; ad != nil && sa.url != "" {
		for _, id := range ad.ids {
			if a.paused[id] {
				return true
			}
		}
	}
	return false
}

// hostCaps counts the check toward its host's caps (rule S3) and the
// spacing of new servers (rule S5).
func (a *Audit) hostCaps(c data.PlannedCheck, x int64) {
	if c.Host == "" {
		return
	}
	h := a.host(c.Host)
	if n := len(h.starts); n > 0 && h.starts[n-1] > x {
		a.broke("S3", "%s planned at %s, before an earlier plan's check of %s", c.ID, c.At.Format(time.RFC3339), c.Host)
	}
	h.starts = append(h.starts, x)
	day := int64(24 * time.Hour / time.Second)
	if h.starts[0] <= x-day {
		h.starts = slices.Clone(h.starts[sort.Search(len(h.starts), func(i int) bool { return h.starts[i] > x-day }):])
	}
	count := func(from int64) int {
		return len(h.starts) - sort.Search(len(h.starts), func(i int) bool { return h.starts[i] >= from })
	}
	sec, hour, dayN := count(x), count(x-int64(time.Hour/time.Second)+1), len(h.starts)
	h.maxSec, h.maxHour, h.maxDay = max(h.maxSec, sec), max(h.maxHour, hour), max(h.maxDay, dayN)
	if hour >= data.HostMaxPerHour {
		h.capHits = append(h.capHits, x)
	}
	if sec > 1 || hour > data.HostMaxPerHour || dayN > data.HostMaxPerDay {
		a.broke("S3", "%s at %s: %d checks of %s in that second, %d in 60 min, %d in 24 h", c.ID, c.At.Format(time.RFC3339), sec, c.Host, hour, dayN)
	}
	if c.Reason == data.ReasonNew {
		if h.lastNew != 0 && x-h.lastNew < int64(data.NewServerSpacing/time.Second) {
			a.broke("S5", "%s at %s: new servers of %s only %ds apart", c.ID, c.At.Format(time.RFC3339), c.Host, x-h.lastNew)
		}
		h.lastNew = x
		h.newStarts = append(h.newStarts, x)
	}
}

func (a *Audit) host(name string) *hostAudit {
	h := a.hosts[name]
	if h == nil {
		h = &hostAudit{}
		a.hosts[name] = h
	}
	return h
}

// Result notes what a check found, once the planner can see it: for the
// server and for its address.
func (a *Audit) Result(r data.Result) {
	if sa := a.servers[r.ID]; sa != nil && sa.url == r.URL {
		sa.state.Apply(r)
		if ad := a.addrs[sa.key]; ad != nil {
			r.URL = sa.key
			ad.state.Apply(r)
		}
	}
}

// Finish ends the audit at the end of the last planned minute: a server
// owed a check for longer than its cadence starved (rule S4), and the
// servers present all along must have had their tier's number of checks
// (rule S1).
func (a *Audit) Finish(l *spool.Ledger) {
	end := a.End.Unix()
	hours := (end - a.Start.Unix()) / 3600
	for id, sa := range a.servers {
		if sa.removed || a.pausedAt(sa) {
			continue
		}
		e, ok := l.Lookup(id)
		if ok && e.Cadence > 0 {
			sa.cadence = int64(e.Cadence)
			sa.stretched = sa.cadence > int64(data.Tier(sa.groupRank)/time.Second)
		}
		if ok && e.NextDue != 0 && e.NextDue < end-int64(e.Cadence) {
			a.broke("S4", "%s owed a check since %s, longer than its cadence %s", id, e.NextDueTime().Format(time.RFC3339), e.EffectiveCadence())
		}
		// A tier or slot that moved (rule S2: a lead is due at its
		// address's slot, a server alone at its own) gives one cycle of
		// another length: the counts below do not apply.
		if !sa.bootstrap || sa.stretched || sa.tierMoved || sa.slotMoved != 0 || sa.everPaused || sa.state.URL == "" {
			continue
		}
		tier := int64(data.Tier(sa.groupRank) / time.Second)
		cycles := (end - a.Start.Unix()) / tier
		if sa.routine > int(cycles)+1 {
			a.broke("S1", "%s had %d routine checks in %d h, more than its tier allows", id, sa.routine, hours)
		}
		if tier == 3600 && hours >= 2 && sa.checks < int(cycles)-1 {
			a.broke("S1", "%s (rank %d) had %d checks in %d h", id, sa.rank, sa.checks, hours)
		}
	}
}

// WriteReport prints the audit: per host the most checks in any second,
// rolling hour and rolling day; checks per server per tier; the delay of
// new servers' first checks; retry intervals; deferrals; servers never
// checked; and every broken rule.
func (a *Audit) WriteReport(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("audit of %s to %s: %d checks (%d new, %d retry, %d routine), %d servers listed\n",
		a.Start.Format(time.RFC3339), a.End.Format(time.RFC3339), a.checks,
		a.byReason[data.ReasonNew], a.byReason[data.ReasonRetry], a.byReason[data.ReasonRoutine], a.listedAll)

	type hostRow struct {
		name                string
		sec, hour, day, sum int
	}
	var rows []hostRow
	worst := hostRow{name: "-"}
	for name, h := range a.hosts {
		r := hostRow{name, h.maxSec, h.maxHour, h.maxDay, 0}
		rows = append(rows, r)
		if r.hour > worst.hour || r.hour == worst.hour && r.day > worst.day {
			worst = r
		}
	}
	slices.SortFunc(rows, func(x, y hostRow) int { return cmp.Or(cmp.Compare(y.day, x.day), strings.Compare(x.name, y.name)) })
	p("\nhost caps (rule S3): most checks of one host   limit\n")
	maxSec := 0
	for _, r := range rows {
		maxSec = max(maxSec, r.sec)
	}
	p("  in any second         %6d                  %d\n", maxSec, 1)
	p("  in any rolling hour   %6d (%s)  %d\n", worst.hour, worst.name, data.HostMaxPerHour)
	if len(rows) > 0 {
		p("  in any rolling day    %6d (%s)  %d\n", rows[0].day, rows[0].name, data.HostMaxPerDay)
	}
	p("  busiest hosts (second / hour / day):\n")
	for _, r := range rows[:min(5, len(rows))] {
		p("    %-40s %d / %d / %d\n", r.name, r.sec, r.hour, r.day)
	}

	p("\nchecks per server (servers listed all along, not paused; rule S1):\n")
	p("  %-9s %-10s %8s %5s %5s %5s\n", "tier", "host", "servers", "min", "p50", "max")
	type group struct {
		tier      string
		stretched bool
	}
	counts := map[group][]int64{}
	var never, neverStretched, neverLate int
	for _, sa := range a.servers {
		if sa.first == 0 && !a.pausedAt(sa) && !sa.removed {
			switch {
			case sa.stretched:
				neverStretched++
			case !sa.bootstrap:
				neverLate++
			default:
				never++
			}
		}
		if !sa.bootstrap || sa.removed || sa.everPaused {
			continue
		}
		tier := "daily"
		if data.Tier(sa.groupRank) == data.HourlyCadence {
			tier = "hourly"
		}
		g := group{tier, sa.stretched}
		counts[g] = append(counts[g], int64(sa.checks))
	}
	for _, g := range []group{{"hourly", false}, {"hourly", true}, {"daily", false}, {"daily", true}} {
		c := counts[g]
		if len(c) == 0 {
			continue
		}
		kind := "within cap"
		if g.stretched {
			kind = "stretched"
		}
		p("  %-9s %-10s %8d %5d %5d %5d\n", g.tier, kind, len(c), pct(c, 0), pct(c, 50), pct(c, 100))
	}

	d := func(s int64) time.Duration { return time.Duration(s) * time.Second }
	p("\nnew servers, first check after listing (rule S5, target %s):\n", data.NewServerTarget)
	p("  count %d  p50 %s  p99 %s  max %s\n", len(a.newDelay), d(pct(a.newDelay, 50)), d(pct(a.newDelay, 99)), d(pct(a.newDelay, 100)))
	p("retries of failing servers that answered before (rule S6, every %s for %s):\n", data.RetryAfterFailure, data.RetryWindow)
	p("  count %d  min %s  p50 %s  max %s\n", len(a.retryGap), d(pct(a.retryGap, 0)), d(pct(a.retryGap, 50)), d(pct(a.retryGap, 100)))
	sharedAddrs, sharedServers := 0, 0
	for _, ad := range a.addrs {
		if len(ad.ids) > 1 {
			sharedAddrs++
			sharedServers += len(ad.ids)
		}
	}
	p("addresses listed more than once: %d, %d servers at them; %d checks were for several servers, giving %d more results without a check of their own\n",
		sharedAddrs, sharedServers, a.shared, a.served)
	p("deferrals (rule S4): %d checks planned in a later minute than due, longest wait %s\n", a.deferred, d(a.longest))
	p("never checked: %d servers on stretched hosts (their cycle is longer than the run), %d added late (not yet due), %d others (their first slot comes after the run)\n",
		neverStretched, neverLate, never)

	if a.OK() {
		p("\nno rule broken\n")
		return
	}
	var rules []string
	for r := range a.Broken {
		rules = append(rules, r)
	}
	slices.Sort(rules)
	p("\nBROKEN:\n")
	for _, r := range rules {
		p("  %-10s %d\n", r, a.Broken[r])
	}
	for _, e := range a.Examples {
		p("  %s\n", e)
	}
}

// pct returns the q-th percentile (nearest rank) of v, 0 for none. It sorts v.
func pct(v []int64, q int) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := (len(v)*q + 99) / 100
	return v[max(0, min(len(v)-1, i-1))]
}

func floorMod(a, b int64) int64 { return (a%b + b) % b }
