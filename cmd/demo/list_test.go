package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// TestListing plans the demo's list with the real planner, as the demo's
// first plan does, and checks that the listing makes the minute the demo
// needs: every server with a slot is planned at its second (S2), the three
// servers of one host 1 s apart (S3), the paused one not at all (S8), and
// the late one is not in the list the plan reads.
func TestListing(t *testing.T) {
	t.Parallel()
	for _, minute := range []time.Time{
		time.Date(2026, 12, 2, 10, 58, 0, 0, time.UTC),
		time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC), // the hour and the day turn during the minute's slots
		time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		t.Run("S2_slots_S3_host_spacing_S8_paused/"+minute.Format("1504"), func(t *testing.T) {
			now := minute.Add(-20 * time.Second)
			l := newListing(members(), minute)
			csv, err := l.rankedCSV(now, false)
			if err != nil {
				t.Fatal(err)
			}
			list := filepath.Join(t.TempDir(), "servers.csv")
			if err := os.WriteFile(list, csv, 0o644); err != nil {
				t.Fatal(err)
			}
			servers, bad, err := lists.ReadServers(list)
			if err != nil || len(bad) > 0 {
				t.Fatalf("the demo's list does not read back: %v %v", err, bad)
			}
			paused, bad, err := lists.ParsePausedList("paused.txt", bytes.NewReader(l.pausedText()))
			if err != nil || len(bad) > 0 {
				t.Fatalf("the demo's paused list does not read back: %v %v", err, bad)
			}
			ids, unmatched := paused.Match(servers)
			if len(unmatched) > 0 || len(ids) != 1 {
				t.Fatalf("paused list matches %v, unmatched %v; want the one paused server", ids, unmatched)
			}
			p := planner.Planner{Now: func() time.Time { return now }}
			rep, err := p.Plan(minute, planner.Input{Servers: servers, Paused: paused}, spool.NewLedger())
			if err != nil {
				t.Fatal(err)
			}
			at := map[string]data.PlannedCheck{}
			for _, c := range rep.Checks {
				at[c.ID] = c
			}
			var shared []time.Time
			for i, m := range l.members {
				id := l.ids[i]
				c, ok := at[id]
				switch {
				case m.paused || m.late:
					if ok {
						t.Errorf("S8/S5: %s planned at %s; a paused or late server must not be", id, c.At)
					}
				case !ok:
					t.Errorf("S2: %s not planned in %s", id, minute)
				case m.spec != nil && m.spec.Host == "tools.demo.test":
					shared = append(shared, c.At)
				case !c.At.Equal(minute.Add(time.Duration(m.second) * time.Second)):
					t.Errorf("S2: %s planned at %s, want second %d", id, c.At, m.second)
				}
			}
			if len(shared) != 3 {
				t.Fatalf("S3: %d servers of the shared host planned, want 3", len(shared))
			}
			for i, a := range shared {
				if want := minute.Add(time.Duration(i) * time.Second); !a.Equal(want) {
					t.Errorf("S3_host_spacing: shared-host check %d at %s, want %s (due at once, 1 s apart)", i, a, want)
				}
			}
		})
	}
}

// TestSlotID: the id found lands on the slot asked for, and the same
// minute gives the same ids (the demo's list is reproducible).
func TestSlotID(t *testing.T) {
	t.Parallel()
	minute := time.Date(2026, 12, 2, 10, 58, 0, 0, time.UTC)
	for _, second := range []int{0, 5, 59, 1800} {
		id := slotID("docs", minute, second)
		if !strings.HasPrefix(id, "docs-") {
			t.Errorf("id %q does not keep the name", id)
		}
		got := int64(planner.SlotOf(id)/time.Second) % 3600
		if want := (minute.Unix()%3600 + int64(second)) % 3600; got != want {
			t.Errorf("S2: slot of %s is second %d of the hour, want %d", id, got, want)
		}
		if again := slotID("docs", minute, second); again != id {
			t.Errorf("slotID not stable: %s then %s", id, again)
		}
	}
}
