package sim

import (
	"fmt"
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
	shared    int // checks for more than one server
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
// list: the servers listed at it, which one check serves.
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
