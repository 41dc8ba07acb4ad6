package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/planner"
)

// TestKilledRunReplanned: a run killed (SIGKILL, by its PID) after a few
// of its checks leaves the rest undone; the next plan, made once the
// minute has begun, plans every one of them again at once, in the next
// minute rather than at their next slot an hour later, and none of those
// that completed (rule S4: owed checks are deferred, never dropped).
func TestKilledRunReplanned(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const hosts, servers = 10, 40
	var list []data.Server
	for i := range servers {
		id := fmt.Sprintf("k%02d", i)
		host := fmt.Sprintf("h%04d.lab.test", i%hosts)
		list = append(list, data.Server{ID: id, Rank: i + 1, URL: "https://" + host + ":8443/mcp/" + id, Added: minute0.Add(-48 * time.Hour)})
	}
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, list); err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(dir, "servers.csv")
	if err := os.WriteFile(csv, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var now time.Time
	cfg := planner.Config{Servers: csv, Data: dir, FirstCheckSoon: true, Now: func() time.Time { return now }}
	m := minute0
	now, cfg.Minute = m.Add(-time.Minute), m
	sum, err := planner.PlanMinute(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Checks) != servers {
		t.Fatalf("first plan: %d checks, want all %d (-first-check-soon)", len(sum.Checks), servers)
	}

	cmd, out := startCrashChild(t, exe, dir, m, hosts, 40)
	completed := map[string]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var rec struct{ Msg, ID string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "check done" {
			if completed[rec.ID] = true; len(completed) == 3 {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}
	err = cmd.Wait()
	t.Logf("run killed after %d checks reported complete (%v)", len(completed), err)
	if len(completed) == 0 || len(completed) == servers {
		t.Fatalf("%d of %d checks completed before the kill: the test proves nothing", len(completed), servers)
	}

	// A check may be journaled and killed before it said so: what is done
	// is what the journal holds.
	states, bad, err := history.LoadStates(dir, minute0)
	if err != nil || len(bad) > 0 {
		t.Fatalf("load states: %v %v", err, bad)
	}
	for id := range completed {
		if _, ok := states[id]; !ok {
			t.Errorf("%s reported complete, not in the journal", id)
		}
	}
	for id := range states {
		completed[id] = true
	}
	next := m.Add(time.Minute)
	now, cfg.Minute = m.Add(time.Second), next
	sum, err = planner.PlanMinute(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	again := map[string]bool{}
	for _, c := range sum.Checks {
		again[c.ID] = true
		if completed[c.ID] {
			t.Errorf("%s completed before the kill, planned again at %s", c.ID, c.At)
		}
	}
	for _, s := range list {
		if !completed[s.ID] && !again[s.ID] {
			t.Errorf("%s, left undone by the killed run of %s, not planned again in %s", s.ID, m.Format("15:04"), next.Format("15:04"))
		}
	}
	if sum.Again != servers-len(completed) {
		t.Errorf("plan of %s: %d checks planned again, want %d: %s", next.Format("15:04"), sum.Again, servers-len(completed), sum)
	}
}
