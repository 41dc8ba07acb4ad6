package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/data/spool/spooltest"
)

// runPlan runs plan and returns what it printed and logged; it fails the
// test on error.
func runPlan(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("plan %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	return out.String(), errs.String()
}

// mustPlanned returns the checks of the plan of minute, failing on any bad
// line.
func mustPlanned(t *testing.T, dir string, minute time.Time) map[string]data.PlannedCheck {
	t.Helper()
	checks, bad, err := spool.ReadPlan(dir, minute)
	if err != nil || len(bad) > 0 {
		t.Fatalf("read plan %s: %v %v", minute.Format(time.RFC3339), err, bad)
	}
	m := map[string]data.PlannedCheck{}
	for _, c := range checks {
		m[c.ID] = c
	}
	return m
}

// writeList writes a ranked list: the header, then rows.
func writeList(t *testing.T, path string, rows ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("id,rank,url,added\n"+strings.Join(rows, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlanBadRows: a listed address of ~200 KB, an unbalanced quote and a
// duplicate id are each named file:line at plan time, the plan exits 0 with
// the usable rows and says in one line how many rows were set aside and
// why; the server with the long address is never planned, so no plan line
// is longer than a plan reader takes.
func TestPlanBadRows(t *testing.T) {
	dir, list := t.TempDir(), filepath.Join(t.TempDir(), "servers.csv")
	const added = ",2026-01-01T00:00:00Z\n"
	writeList(t, list, "a,1,https://a.example/mcp"+added)
	m1 := time.Date(2100, 6, 1, 12, 0, 0, 0, time.UTC)
	runPlan(t, "-servers", list, "-data", dir, "-at", m1.Format(time.RFC3339))
	// A minute later: two servers join, one of them at an address too long
	// to check, and two rows are broken.
	writeList(t, list, "a,1,https://a.example/mcp"+added,
		"long,2,https://b.example/"+strings.Repeat("a", 200_000)+added,
		"fresh,3,https://c.example/mcp"+added,
		`quote,4,"https://d.example/mcp`+added,
		"a,5,https://e.example/mcp"+added)
	m2 := m1.Add(time.Minute)
	_, logs := runPlan(t, "-servers", list, "-data", dir, "-at", m2.Format(time.RFC3339))
	for _, want := range []string{
		list + `:3: server \"long\": url \"https://b.example/aaaa`,
		`listed as not checkable (address is too long)`,
		list + `:5: bad quoting (extraneous or missing \" in quoted-field) in row`,
		list + `:6: duplicate id \"a\" (first on line 2, kept)`,
		"ranked list " + list + ": 3 servers listed; 2 rows set aside (1 bad quoting, 1 duplicate id); 1 listed as not checkable (1 address is too long)",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("plan's log lacks %q:\n%.2000s", want, logs)
		}
	}
	// The same list a minute later: the rows were said; they are said
	// again a day later or when they change.
	if _, logs := runPlan(t, "-servers", list, "-data", dir, "-at", m2.Add(time.Minute).Format(time.RFC3339)); strings.Contains(logs, "duplicate id") || strings.Contains(logs, "ranked list") {
		t.Errorf("the same bad rows said again a minute later:\n%s", logs)
	}
	planned := mustPlanned(t, dir, m2)
	if _, ok := planned["long"]; ok {
		t.Error("the server with a 200 KB address was planned")
	}
	if c, ok := planned["fresh"]; !ok || c.Reason != data.ReasonNew {
		t.Errorf("fresh: planned %v (%+v), want its first check (rule S5)", ok, c)
	}
}

// TestPlanListShrinkRefused: a ranked list cut in half after a plan took
// the whole is refused, the last good list stands (every server is still
// in the ledger), and plan -accept-shrink takes it.
func TestPlanListShrinkRefused(t *testing.T) {
	dir, list := t.TempDir(), filepath.Join(t.TempDir(), "servers.csv")
	var rows []string
	for i := range 100 {
		rows = append(rows, fmt.Sprintf("s%03d,%d,https://h%d.example/mcp,2026-01-01T00:00:00Z\n", i, i+1, i))
	}
	m := time.Date(2100, 6, 1, 12, 0, 0, 0, time.UTC)
	ledgerServers := func() int {
		l, err := spool.ReadLedger(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Servers)
	}
	writeList(t, list, rows...)
	runPlan(t, "-servers", list, "-data", dir, "-at", m.Format(time.RFC3339))
	writeList(t, list, rows[:50]...)
	_, logs := runPlan(t, "-servers", list, "-data", dir, "-at", m.Add(time.Minute).Format(time.RFC3339))
	if !strings.Contains(logs, lists.ErrListShrank.Error()) || !strings.Contains(logs, "50 of the 100 of the last good list are gone") {
		t.Errorf("plan's log does not name the refusal:\n%s", logs)
	}
	if n := ledgerServers(); n != 100 {
		t.Errorf("ledger holds %d servers after a refused list, want the last good list's 100", n)
	}
	runPlan(t, "-servers", list, "-data", dir, "-accept-shrink", "-at", m.Add(2*time.Minute).Format(time.RFC3339))
	if n := ledgerServers(); n != 50 {
		t.Errorf("ledger holds %d servers after -accept-shrink, want 50", n)
	}
	if b, err := os.ReadFile(data.Dir(dir).ServersCopy()); err != nil || strings.Count(string(b), "\n") != 51 {
		t.Errorf("last good list: %v, %d lines; want the list taken", err, strings.Count(string(b), "\n"))
	}
}

// TestPlanReturningServerIsNotNew: a server that leaves the list and comes
// back at its address keeps its history: the planner plans it at its usual
// pace, not as a new server.
func TestPlanReturningServerIsNotNew(t *testing.T) {
	dir, list := t.TempDir(), filepath.Join(t.TempDir(), "servers.csv")
	var rows []string
	for i := range 40 {
		rows = append(rows, fmt.Sprintf("s%03d,%d,https://h%d.example/mcp,2026-01-01T00:00:00Z\n", i, i+1, i))
	}
	m := time.Date(2100, 6, 1, 12, 0, 0, 0, time.UTC)
	writeList(t, list, rows...)
	runPlan(t, "-servers", list, "-data", dir, "-at", m.Format(time.RFC3339))
	spooltest.MustJournal(t, dir, "test-s007", data.Result{ID: "s007", URL: "https://h7.example/mcp", Status: data.Working, Started: m.Add(-10 * time.Minute)}).Close()
	writeList(t, list, append(append([]string{}, rows[:7]...), rows[8:]...)...) // s007 leaves (1 of 40)
	runPlan(t, "-servers", list, "-data", dir, "-at", m.Add(time.Minute).Format(time.RFC3339))
	writeList(t, list, rows...) // and comes back
	runPlan(t, "-servers", list, "-data", dir, "-at", m.Add(2*time.Minute).Format(time.RFC3339))
	if c, ok := mustPlanned(t, dir, m.Add(2*time.Minute))["s007"]; ok && c.Reason == data.ReasonNew {
		t.Errorf("s007 came back and was planned as new: %+v", c)
	}
	// A server never seen before, listed at the same plan, is new.
	writeList(t, list, append(rows, "s999,41,https://h99.example/mcp,2026-01-01T00:00:00Z\n")...)
	runPlan(t, "-servers", list, "-data", dir, "-at", m.Add(3*time.Minute).Format(time.RFC3339))
	if c, ok := mustPlanned(t, dir, m.Add(3*time.Minute))["s999"]; !ok || c.Reason != data.ReasonNew {
		t.Errorf("s999: planned %v %+v, want new", ok, c)
	}
}
