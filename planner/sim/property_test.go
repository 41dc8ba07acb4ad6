package sim

import (
	"context"
	"fmt"
	mathrand "math/rand"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// shape is a random ranked list of the kinds the rules must survive.
type shape struct {
	seed      uint64
	bigHost   int     // servers on one host far beyond its caps
	crowded   []int   // hourly servers on each of a few hosts, 121-500
	singles   int     // hosts with one server
	late      float64 // share added during the run
	churn     float64 // share removed, and another moved, during the run
	failing   float64
	pausedPct float64
	shared    float64 // share listed again under a new id at the same address, spelt otherwise half the time
}

func (s shape) String() string {
	return fmt.Sprintf("seed %d: big host %d, crowded %v, %d single hosts, late %.3f, churn %.3f, failing %.2f, paused %.3f, shared %.2f",
		s.seed, s.bigHost, s.crowded, s.singles, s.late, s.churn, s.failing, s.pausedPct, s.shared)
}

func randomShape(r *rand.Rand) shape {
	s := shape{seed: r.Uint64(), bigHost: r.IntN(3000), singles: 200 + r.IntN(1500),
		late: r.Float64() * 0.05, churn: r.Float64() * 0.02, failing: r.Float64() * 0.3, pausedPct: r.Float64() * 0.02}
	for range 1 + r.IntN(3) {
		s.crowded = append(s.crowded, 121+r.IntN(380))
	}
	s.shared = r.Float64() * 0.3
	return s
}

// servers builds the list: crowded hosts take the top ranks (hourly), the
// big host and the single hosts the rest, ranks shuffled within.
func (s shape) servers(start time.Time) []data.Server {
	r := rand.New(rand.NewPCG(s.seed, 1))
	var out []data.Server
	add := func(host string, rank int) {
		id := fmt.Sprintf("p%06d", len(out))
		added := start.Add(-time.Duration(1+r.IntN(1000)) * time.Hour)
		if r.Float64() < s.late {
			added = start.Add(time.Duration(r.IntN(3*3600)) * time.Second)
		}
		out = append(out, data.Server{ID: id, Rank: rank, URL: "https://" + host + "/mcp/" + id, Added: added})
	}
	rank := 1
	for h, n := range s.crowded {
		for range n {
			add(fmt.Sprintf("crowded-%d.example.net", h), rank)
			rank++
		}
	}
	for range s.bigHost {
		add("big.example.net", rank+r.IntN(5000))
	}
	for i := range s.singles {
		add(fmt.Sprintf("single-%d.example.net", i), 1+r.IntN(rank+s.bigHost+s.singles))
	}
	for _, sv := range out[:len(out):len(out)] {
		if r.Float64() < s.shared {
			sv.ID += "-again"
			sv.Rank = 1 + r.IntN(len(out))
			if r.IntN(2) == 0 {
				sv.URL = strings.Replace(sv.URL, "https://", "HTTPS://", 1) + "#again"
			}
			out = append(out, sv)
		}
	}
	lists.SortServers(out)
	return out
}

// pausedAt pauses a share of the servers for a random hour of the run.
func (s shape) pausedAt(all []data.Server, start time.Time) func(time.Time) map[string]bool {
	r := rand.New(rand.NewPCG(s.seed, 2))
	type span struct{ from, to time.Time }
	spans := map[string]span{}
	for _, sv := range all {
		if r.Float64() < s.pausedPct {
			from := start.Add(time.Duration(r.IntN(120)) * time.Minute)
			spans[sv.ID] = span{from, from.Add(time.Hour)}
		}
	}
	return func(now time.Time) map[string]bool {
		m := map[string]bool{}
		for id, sp := range spans {
			if !now.Before(sp.from) && now.Before(sp.to) {
				m[id] = true
			}
		}
		return m
	}
}

// MustHoldRules simulates the shape for d and fails at the first minute
// after which any rule is broken.
func MustHoldRules(t *testing.T, s shape, d time.Duration) *Sim {
	t.Helper()
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	all := s.servers(start)
	sim := &Sim{
		List:   EvolvingList(all, start, d, s.churn, s.seed),
		Paused: s.pausedAt(all, start),
		Check:  Outcomes(s.failing, s.seed),
		OnMinute: func(rep planner.Report, a *Audit) error {
			if !a.OK() {
				return fmt.Errorf("after the plan of %s: %v\n%v", rep.Minute.Format(time.RFC3339), a.Broken, a.Examples)
			}
			return nil
		},
	}
	if err := sim.Run(context.Background(), start, d); err != nil {
		t.Fatalf("%v: %v", s, err)
	}
	sim.Audit.Finish(sim.Ledger)
	if !sim.Audit.OK() {
		t.Fatalf("%v: at the end: %v\n%v", s, sim.Audit.Broken, sim.Audit.Examples)
	}
	if sim.Audit.checks == 0 {
		t.Fatalf("%v: nothing planned", s)
	}
	if s.shared > 0.05 && sim.Audit.shared == 0 {
		t.Fatalf("%v: no check for several servers at one address", s)
	}
	return sim
}

// TestPropertyRules: over random lists (crowded hosts, a host far beyond
// its caps, many single-server hosts, servers added, removed, moved and
// paused mid-run, random outcomes) every S rule holds after every
// simulated minute.
func TestPropertyRules(t *testing.T) {
	t.Parallel() // a simulation of its own, on the CPU: alongside the others
	// -short's one list is simulated for 90 minutes: its first checks, the
	// first paused servers, some added, removed and moved; make test runs
	// every list for 3 hours.
	d := 3 * time.Hour
	if testing.Short() {
		d = 90 * time.Minute
	}
	f := func(seed uint64) bool {
		s := randomShape(rand.New(rand.NewPCG(seed, 0)))
		t.Run(fmt.Sprint(seed), func(t *testing.T) { MustHoldRules(t, s, d) })
		return !t.Failed()
	}
	if err := quick.Check(f, &quick.Config{MaxCount: propertyCases(), Rand: propertyRand()}); err != nil {
		t.Error(err)
	}
}

// propertyRand is where TestPropertyRules draws its inputs: the same ones
// every run (so CI does not fail at random on an input nobody can name),
// or new ones with PLANNER_PROPERTY_RANDOM=1, the way to look for more
// (go test ./planner/sim -run TestPropertyRules with PLANNER_PROPERTY_CASES=200).
// A failing input becomes a fixed case below.
func propertyRand() *mathrand.Rand {
	if os.Getenv("PLANNER_PROPERTY_RANDOM") == "1" {
		return nil // quick seeds from the clock
	}
	return mathrand.New(mathrand.NewSource(20261202))
}

// TestPropertyRulesS4LeadLeft is the input on which TestPropertyRules once
// failed (#3 of a CI run): p000003 led an address it shared with
// p000003-again, which left the list at 09:16. The planner kept the
// address's due time, two hours after its last check on its crowded host,
// and only then, at 11:04, worked out its own, 1h49m in the past: a check
// 2 h after the last on a 1h30m cadence (rule S4). Now the plan after a
// lead stands alone works its due out afresh (sharing.mirror) and checks it
// at once.
func TestPropertyRulesS4LeadLeft(t *testing.T) {
	skipFixedInputInShort(t)
	s := randomShape(rand.New(rand.NewPCG(0x38e1243176bd0a5a, 0)))
	if s.seed != 17908784367184061063 || s.bigHost != 2919 {
		t.Fatalf("randomShape no longer gives the failing input: %v", s)
	}
	sim := MustHoldRules(t, s, 3*time.Hour)
	e, ok := sim.Ledger.Lookup("p000003")
	if !ok || e.Planned != time.Date(2026, 12, 2, 10, 14, 48, 0, time.UTC).Unix() {
		t.Errorf("p000003's last check planned at %s, want 10:14:48 (its own slot, 09:14:48 then 10:14:48, after it stood alone at 09:16)",
			time.Unix(e.Planned, 0).UTC().Format(time.RFC3339))
	}
}

// TestPropertyRulesS1LeadLeft is the input on which TestPropertyRules failed
// next: daily p003660 led the address it shared with p003660-again, was
// checked at the address's slot (10:03:42), then stood alone and was due at
// its own (11:06:35), two routine checks in one hour. That is rule S2 (a
// lead keeps the address's slot, a server alone its own): the audit counts
// a server whose slot moved no more against its tier (rule S1) than one
// whose rank moved it.
// 0x9bec065c592c65a5 is the same for a follower whose lead left
// (p003026-again).
func TestPropertyRulesS1LeadLeft(t *testing.T) {
	skipFixedInputInShort(t)
	for _, input := range []uint64{0xd09eee9290d3d851, 0x9bec065c592c65a5} {
		t.Run(fmt.Sprintf("%#x", input), func(t *testing.T) {
			MustHoldRules(t, randomShape(rand.New(rand.NewPCG(input, 0))), 3*time.Hour)
		})
	}
}

// TestPropertyRulesS5Moved is the input on which TestPropertyRules failed
// next: p000591 moved to a new address (a new server) while a retry at its
// old one ran; that retry ended after the first check at the new address,
// took its place in the state, and the planner, finding no result of the
// new address, took the first check for lost and planned it as new again
// (rule S5). data.State.Apply now ignores an older check of the address
// left.
func TestPropertyRulesS5Moved(t *testing.T) {
	skipFixedInputInShort(t)
	MustHoldRules(t, randomShape(rand.New(rand.NewPCG(0x582eea7548fad8e2, 0))), 3*time.Hour)
}

// TestPropertyRulesS2JoinedAlone is the fourth input TestPropertyRules
// failed on: p000350-again followed p000350 at one address, moved (its
// listing changed, not the address: a new record), and stood alone when
// p000350 left. Its record had the lead's last check mirrored onto it,
// made before it was listed there, which the planner took for its own
// check lost and planned again, due off its slot (rule S2). A follower now
// takes only the checks made since it was listed (sharing.mirror).
func TestPropertyRulesS2JoinedAlone(t *testing.T) {
	skipFixedInputInShort(t)
	MustHoldRules(t, randomShape(rand.New(rand.NewPCG(0xee6b439c2178d7b9, 0))), 3*time.Hour)
}

// skipFixedInputInShort skips a fixed input of TestPropertyRules in
// -short, where TestPropertyRules' one case stands for them: each
// simulates 3 hours of a shape of thousands of servers.
func skipFixedInputInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("3 simulated hours of thousands of servers: full mode only, make test runs it")
	}
}

// TestPropertyRulesS2Again is an input TestPropertyRules failed on in a
// CI-like run of 2026-12-02 (#2, seed 1374828277292909: a big host of
// 2,660 servers, 28% listed again at an address): p001028-again, listed
// at HTTPS://big.example.net/mcp/p001028#again, led the address it shared
// with p001028, checked for both at 10:44:08. At 10:51 its listing moved
// to ...#again/v2 (the move went into the fragment: the same address, a
// new record), and as the lead it adopted the address's last check,
// 10:44:08, into its new record. When p001028 left at 11:35 it stood
// alone: the result of 10:44:08 is kept under its old listing, so the
// planner took that check for its own, lost, and planned it again at once,
// due 10:44:08, off its slot (rule S2). A lead now plans from a check made
// before it was listed while it leads, but its record does not keep it
// (sharing.adopt, sharing.view), as a follower's does not (sharing.mirror):
// standing alone, never checked at its listing, it is a new server.
func TestPropertyRulesS2Again(t *testing.T) {
	skipFixedInputInShort(t)
	s := randomShape(rand.New(rand.NewPCG(0xe45166cc8b58a888, 0)))
	if s.seed != 1374828277292909 || s.bigHost != 2660 {
		t.Fatalf("randomShape no longer gives the failing input: %v", s)
	}
	sim := MustHoldRules(t, s, 3*time.Hour)
	e, ok := sim.Ledger.Lookup("p001028-again")
	if !ok || e.Reason != spool.CodeNew || e.Planned < time.Date(2026, 12, 2, 11, 36, 0, 0, time.UTC).Unix() {
		t.Errorf("p001028-again's last check planned at %s (%s), want a new listing's first check once it stood alone at 11:35 (rule S5), not the address's check of 10:44:08 taken for its own",
			time.Unix(e.Planned, 0).UTC().Format(time.RFC3339), e.Reason)
	}
}

// TestPropertyTenThousandOnOneHost: one host with 10,000 servers, and
// every one of its hourly servers gets its fair share.
func TestPropertyTenThousandOnOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("two simulated hours of 11,500 servers: full mode only, make test runs it")
	}
	s := shape{seed: 42, bigHost: 10_000, crowded: []int{500}, singles: 1000, late: 0.01, churn: 0.005, failing: 0.1, pausedPct: 0.005}
	sim := MustHoldRules(t, s, 2*time.Hour)
	big := 0
	for _, h := range []string{"big.example.net"} {
		big = len(sim.Ledger.Hosts[h])
	}
	// The big host uses its share: at least planner.RoutineShare checks in the
	// second hour, and never more than the cap (the audit holds that).
	if big < planner.RoutineShare {
		t.Errorf("big host: %d checks in 2 h, want at least %d", big, planner.RoutineShare)
	}
	var cadences []int32
	for _, e := range sim.Ledger.Servers {
		if e.Rank <= data.HourlyTierMaxRank && e.Cadence > 0 {
			cadences = append(cadences, e.Cadence)
		}
	}
	if slices.Max(cadences) <= 3600 {
		t.Errorf("no hourly server stretched on hosts beyond their caps: %v", slices.Compact(slices.Sorted(slices.Values(cadences))))
	}
}

// propertyCases is how many random lists TestPropertyRules tries:
// PLANNER_PROPERTY_CASES, else 6 (1 with -short: the inputs it failed on
// run as fixed cases).
func propertyCases() int {
	if n, err := strconv.Atoi(os.Getenv("PLANNER_PROPERTY_CASES")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 1
	}
	return 6
}
