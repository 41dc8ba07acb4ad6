package sim

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/data"
)

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
