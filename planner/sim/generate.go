package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
)

// GenConfig shapes a generated ranked list: a test list for the simulation
// and the benchmarks, never a real one.
type GenConfig struct {
	Servers int       // how many
	Hosts   int       // how many hosts; 0 means Servers/10
	BigHost int       // servers on one host far beyond its caps (rule S4 fair sharing); 0 none
	Base    time.Time // servers were added in the year before Base, Late of them in the day after
	Late    float64   // share added in the day after Base: new servers for a simulation of that day
	NoURL   float64   // share with no address (runs only locally)
	// Shared is the share of Servers listed a second time, under a new id
	// (srv-dup-N) and a rank of its own, at the address of one of them
	// (one check serves both). With Distinct each is at
	// an address of its own on the same host instead, as if every listing
	// were checked on its own: the list to compare the checks with.
	Shared   float64
	Distinct bool
	Seed     uint64
}

// Generate returns a ranked list shaped by cfg, in rank order. Hosts are
// named host-N.example.net (example.net is reserved: nothing real is ever
// named). A third of the servers crowd onto a few hosts (Zipf), so some
// hosts carry hundreds of servers; ranks are shuffled over hosts.
func Generate(cfg GenConfig) []data.Server {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x706c7567))
	hosts := cfg.Hosts
	if hosts == 0 {
		hosts = max(1, cfg.Servers/10)
	}
	zipf := rand.NewZipf(r, 1.2, 1, uint64(max(1, hosts-1)))
	dups := int(cfg.Shared * float64(cfg.Servers))
	ranks := r.Perm(cfg.Servers + dups)
	base := cfg.Base.UTC().Truncate(time.Second)
	out := make([]data.Server, cfg.Servers, cfg.Servers+dups)
	for i := range out {
		s := data.Server{ID: fmt.Sprintf("srv-%07d", i), Rank: ranks[i] + 1}
		var h int
		switch {
		case i < cfg.BigHost:
			h = 0
		case r.Float64() < 1.0/3:
			h = 1 + int(zipf.Uint64())%max(1, hosts-1)
		default:
			h = 1 + r.IntN(max(1, hosts-1))
		}
		if r.Float64() >= cfg.NoURL {
			s.URL = fmt.Sprintf("https://host-%d.example.net/mcp/%d", h, i)
		}
		if r.Float64() < cfg.Late {
			s.Added = base.Add(time.Duration(r.Int64N(int64(24*time.Hour/time.Second))) * time.Second)
		} else {
			s.Added = base.Add(-time.Duration(1+r.Int64N(int64(365*24*time.Hour/time.Second))) * time.Second)
		}
		out[i] = s
	}
	if dups > 0 {
		for j, k := range r.Perm(cfg.Servers)[:dups] {
			s := out[k]
			s.ID, s.Rank = fmt.Sprintf("srv-dup-%07d", j), ranks[cfg.Servers+j]+1
			if cfg.Distinct && s.URL != "" {
				s.URL += "/copy"
			}
			out = append(out, s)
		}
	}
	lists.SortServers(out)
	return out
}

// mix returns a well-spread hash of a server id and a number.
func mix(id string, n uint64) uint64 {
	h := data.StableHash(id, 0x736c6f74) /* planner's slot hash */ ^ (n * 0x9e3779b97f4a7c15)
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 29
	return h
}

func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// Outcomes returns what simulated checks find, the same every time for
// the same server and start: a share failing of the servers fail (half of
// them always, so they never answer (rule S7), half at random, so they
// answered before (rule S6)); 1% refuse with a Retry-After of up to two
// hours, 1% fail with HTTP 503 and a Retry-After of 20 minutes now and then;
// a tenth need a key; a server without an address is not checkable; the rest
// work.
func Outcomes(failing float64, seed uint64) func(c data.PlannedCheck) data.Result {
	return func(c data.PlannedCheck) data.Result {
		u := unit(mix(c.ID, seed))
		roll := unit(mix(c.ID, seed^uint64(c.At.Unix())))
		r := data.Result{
			Status: data.Working, Detail: "ok", Protocol: "2025-11-25", Transport: data.TransportStreamable,
			Duration: 200*time.Millisecond + time.Duration(roll*4800)*time.Millisecond, ToolCount: 3,
		}
		switch {
		case c.URL == "":
			r = data.Result{Status: data.NotCheckable, Detail: "no address"}
		case u < failing/2:
			r = data.Result{Status: data.Failing, Detail: "connection refused", Duration: 50 * time.Millisecond}
		case u < failing && roll < 0.5:
			r = data.Result{Status: data.Failing, Detail: "HTTP 502", HTTPStatus: 502, Duration: 300 * time.Millisecond}
		case u >= failing && u < failing+0.01:
			r = data.Result{Status: data.Refused, Detail: "HTTP 429", HTTPStatus: 429, Duration: 100 * time.Millisecond,
				RetryAfter: c.At.Add(time.Duration(1+roll*7200) * time.Second)}
		case u >= failing+0.01 && u < failing+0.02 && roll < 0.3:
			r = data.Result{Status: data.Failing, Detail: "HTTP 503", HTTPStatus: 503, Duration: 100 * time.Millisecond,
				RetryAfter: c.At.Add(20 * time.Minute)}
		case u >= failing+0.02 && u < failing+0.12:
			r.Status, r.Detail, r.HTTPStatus = data.NeedsKey, "HTTP 401", 401
		}
		return r
	}
}

// EvolvingList returns the ranked list as of a time, for a simulation from
// start for d: a server appears at its Added time; a share churn of them is
// removed at a random time in the run, another share churn moves to a new
// address (a new server). The same slice is returned while nothing
// changes.
func EvolvingList(all []data.Server, start time.Time, d time.Duration, churn float64, seed uint64) func(now time.Time) []data.Server {
	type event struct {
		appear, remove, move int64
	}
	ev := make([]event, len(all))
	var times []int64
	never := int64(1) << 62
	for i, s := range all {
		e := event{appear: s.Added.Unix(), remove: never, move: never}
		u := unit(mix(s.ID, seed^0xc0ffee))
		at := start.Unix() + int64(unit(mix(s.ID, seed^0xbeef))*float64(d/time.Second))
		switch {
		case u < churn:
			e.remove = at
		case u < 2*churn && s.URL != "":
			e.move = at
		}
		ev[i] = e
		times = append(times, e.appear, e.remove, e.move)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	var cur []data.Server
	last := int64(-1 << 62)
	return func(now time.Time) []data.Server {
		u := now.Unix()
		i, _ := slices.BinarySearch(times, last+1)
		if cur != nil && (i == len(times) || times[i] > u) {
			return cur
		}
		last = u
		cur = make([]data.Server, 0, len(all))
		for k, s := range all {
			e := ev[k]
			if e.appear > u || e.remove <= u {
				continue
			}
			if e.move <= u {
				s.URL += "/v2"
			}
			cur = append(cur, s)
		}
		return cur
	}
}
