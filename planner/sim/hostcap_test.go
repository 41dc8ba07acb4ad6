package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
)

// TestHostHourCap is rule S3's 120 an hour at its edge, directly: 150 new
// hourly servers join one host at once. Their first checks go 30 s apart
// (S5), and from the second hour their routine checks come due too: 150
// checks an hour are owed, and every rolling hour of the host still holds
// at most 120 starts, filled to the cap; the rest are deferred, never
// dropped (S4).
func TestHostHourCap(t *testing.T) {
	t.Parallel() // a simulation of its own, on the CPU: alongside the others
	const n = 150
	added := t0.Add(10 * time.Minute)
	var late []data.Server
	for i := range n {
		late = append(late, srv(fmt.Sprintf("n%03d", i), 10+i, "busy.example.net"))
	}
	lists.SortServers(late)
	list := func(now time.Time) []data.Server {
		if now.Before(added) {
			return []data.Server{srv("seed", 1, "other.example.net")} // a first plan before them: they are new
		}
		return late
	}
	checks, _ := world{list: list}.MustRun(t, 3*time.Hour)
	var starts []int64
	first := map[string]bool{}
	for _, c := range checks {
		if c.Host != "busy.example.net" {
			continue
		}
		starts = append(starts, c.At.Unix())
		first[c.ID] = true
	}
	slices.Sort(starts)
	if len(first) != n {
		t.Fatalf("S4: %d of %d new servers checked in 3 h, want every one (deferred, never dropped)", len(first), n)
	}
	most := 0
	for i, x := range starts {
		k := 0
		for _, y := range starts[i:] {
			if y-x < 3600 {
				k++
			}
		}
		most = max(most, k)
	}
	if most != data.HostMaxPerHour {
		t.Errorf("S3: the busiest rolling hour of the host holds %d starts, want exactly %d (the cap, filled)", most, data.HostMaxPerHour)
	}
	if d := starts[data.HostMaxPerHour] - starts[0]; d < 3600 {
		t.Errorf("S3: start %d of the host %d s after the first, want at least 3600", data.HostMaxPerHour+1, d)
	}
}
