package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/pause"
	"plug.directory/prober/pause/pausetest"
	"plug.directory/prober/planner"
)

func TestMain(m *testing.M) {
	testutil.ShortInMemory() // each plan and fold writes and fsyncs files
	os.Exit(m.Run())
}

// MustRun runs plan with args and fails the test on error.
func MustRun(tb testing.TB, args ...string) string {
	tb.Helper()
	var out, errs bytes.Buffer
	if err := run(context.Background(), args, &out, &errs); err != nil {
		tb.Fatalf("plan %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	return out.String()
}

// TestRunGolden plans three minutes of a small directory: the first plan
// sees four servers, the next six more (three new on one host, 30 s apart;
// one without an address; two paused, by address and by id; one bad row),
// and a server that answered before fails (a retry). The plan files must
// match testdata/golden.
func TestRunGolden(t *testing.T) {
	dir := t.TempDir()
	td := func(name string) string { return filepath.Join("testdata", name) }
	MustRun(t, "-servers", td("servers-a.csv"), "-paused", td("paused.txt"), "-data", dir, "-at", "2100-06-01T11:59:00Z")
	answered := time.Date(2100, 6, 1, 11, 0, 0, 0, time.UTC)
	failed := time.Date(2100, 6, 1, 11, 55, 10, 0, time.UTC)
	notes := "https://notes.example.org/mcp"
	spooltest.MustJournal(t, dir, "test-notes",
		data.Result{ID: "notes", URL: notes, Status: data.Working, Protocol: "2025-06-18", Transport: data.TransportSSE, Started: answered},
		data.Result{ID: "notes", URL: notes, Status: data.Failing, Detail: "HTTP 502", Started: failed}).Close()
	for _, minute := range []string{"2100-06-01T12:00:00Z", "2100-06-01T12:01:00Z"} {
		MustRun(t, "-servers", td("servers-b.csv"), "-paused", td("paused.txt"), "-data", dir, "-at", minute)
		at, _ := time.Parse(time.RFC3339, minute)
		got, err := os.ReadFile(data.Dir(dir).Plan(at))
		if err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, "testdata/golden/"+at.Format("2006-01-02-1504")+".jsonl", got)
	}
}

// TestRunPausedUnmatched (rule R1): plan -v logs each entry of the paused
// list that names no listed server, with its line, and none that names
// one, by id or by address; the servers named are not planned (rule S8).
func TestRunPausedUnmatched(t *testing.T) {
	var out, errs bytes.Buffer
	dir := t.TempDir()
	paused := mustWriteLines(t, filepath.Join(dir, "paused.txt"),
		[]string{"ghost", "HTTPS://Quiet.Example.com/mcp/", "gohst", "https://nowhere.example/mcp"})
	if err := run(context.Background(), []string{"-servers", filepath.Join("testdata", "servers-b.csv"), "-paused", paused,
		"-data", dir, "-at", "2100-06-01T12:00:00Z", "-first-check-soon", "-v"}, &out, &errs); err != nil {
		t.Fatal(err, errs.String())
	}
	var unmatched []string
	for line := range strings.Lines(errs.String()) {
		if strings.Contains(line, "paused list names no listed server") {
			unmatched = append(unmatched, strings.TrimSpace(line[strings.Index(line, "line="):]))
		}
	}
	want := []string{"line=" + paused + ":3 entry=gohst", "line=" + paused + ":4 entry=https://nowhere.example/mcp"}
	if !slices.Equal(unmatched, want) {
		t.Errorf("logged %q; want %q", unmatched, want)
	}
	checks, _, err := spool.ReadPlan(dir, time.Date(2100, 6, 1, 12, 0, 0, 0, time.UTC))
	if err != nil || len(checks) == 0 {
		t.Fatalf("plan: %v, %d checks", err, len(checks))
	}
	for _, c := range checks {
		if c.ID == "ghost" || c.ID == "quiet" {
			t.Errorf("S8: paused %s planned at %s", c.ID, c.At)
		}
	}
}

// TestRunSameMinuteTwice: planning a minute again with the same inputs
// writes the same plan and leaves the ledger as the first plan left it.
func TestRunSameMinuteTwice(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "servers.csv")
	MustRun(t, "-generate", "2000", "-out", list, "-base", "2100-06-01T00:00:00Z")
	for m := range 30 {
		MustRun(t, "-servers", list, "-data", dir, "-at", time.Date(2100, 6, 1, 12, m, 0, 0, time.UTC).Format(time.RFC3339))
	}
	at := time.Date(2100, 6, 1, 12, 30, 0, 0, time.UTC)
	MustRun(t, "-servers", list, "-data", dir, "-at", at.Format(time.RFC3339))
	first, _ := os.ReadFile(data.Dir(dir).Plan(at))
	l1, err1 := spool.ReadLedger(dir)
	MustRun(t, "-servers", list, "-data", dir, "-at", at.Format(time.RFC3339))
	second, _ := os.ReadFile(data.Dir(dir).Plan(at))
	l2, err2 := spool.ReadLedger(dir)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || !bytes.Equal(first, second) {
		t.Errorf("same minute, same inputs, different plans:\n%s\n%s", first, second)
	}
	if !l1.Equal(l2) {
		t.Error("planning the same minute again changed the ledger")
	}
	// An earlier minute already planned is left as it is.
	out := MustRun(t, "-servers", list, "-data", dir, "-at", "2100-06-01T12:10:00Z")
	if !strings.Contains(out, "already planned") {
		t.Errorf("replanning an earlier minute: %q", out)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	td := func(name string) string {
		return filepath.Join("..", "..", "data", "lists", "testdata", "servers", name)
	}
	cases := []struct {
		name string
		args []string
		want string // in the error
	}{
		{"no servers", []string{"-data", dir}, "-servers FILE is required"},
		{"no data", []string{"-servers", td("valid.csv")}, "-data DIR is required"},
		{"S9 past", []string{"-servers", td("valid.csv"), "-data", dir, "-at", "2020-01-01T00:00:00Z"}, planner.ErrPast.Error()},
		{"half minute", []string{"-servers", td("valid.csv"), "-data", dir, "-at", "2100-01-01T00:00:30Z"}, "not a whole minute"},
		// With no last good list to stand (a fresh data directory).
		{"empty list", []string{"-servers", td("invalid-empty.csv"), "-data", t.TempDir(), "-at", "2100-01-01T00:00:00Z"}, "no server in the ranked list"},
		{"unreadable list", []string{"-servers", filepath.Join(dir, "missing.csv"), "-data", t.TempDir(), "-at", "2100-01-01T00:00:00Z"}, "read ranked list: open"},
		{"unreadable paused list", []string{"-servers", td("valid.csv"), "-paused", filepath.Join(dir, "missing.txt"), "-data", dir, "-at", "2100-01-01T00:00:00Z"}, "read paused list"},
		{"simulate into a used directory", []string{"-simulate", "1h", "-servers", td("valid.csv"), "-data", "USED"}, "already holds a ledger"},
	}
	used := t.TempDir()
	MustRun(t, "-servers", td("valid.csv"), "-data", used, "-at", "2100-01-01T00:00:00Z")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, a := range c.args {
				if a == "USED" {
					c.args[i] = used
				}
			}
			err := run(context.Background(), c.args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "plans", "2100-01-01")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a plan was written despite the errors: %v", err)
	}
}

// TestRunSimulate runs the command as docs/development.md does, on a small list
// (-short: 15 minutes of 1,000 servers, each minute's plan and results
// written to disk; make test runs 3 hours of 3,000).
func TestRunSimulate(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "servers.csv")
	servers, length := 3000, 3*time.Hour
	if testing.Short() {
		servers, length = 1000, 15*time.Minute
	}
	MustRun(t, "-generate", fmt.Sprint(servers), "-out", list, "-base", "2100-06-01T00:00:00Z", "-late", "0.02")
	out := MustRun(t, "-simulate", length.String(), "-servers", list, "-data", filepath.Join(dir, "sim"), "-at", "2100-06-01T00:00:00Z", "-failing", "0.1")
	for _, want := range []string{"in any rolling hour", "new servers, first check", "retries of failing servers", "deferrals", "never checked", "no rule broken"} {
		if !strings.Contains(out, want) {
			t.Errorf("simulation report lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(data.Dir(filepath.Join(dir, "sim")).Plan(time.Date(2100, 6, 1, 0, 0, 0, 0, time.UTC).Add(length - time.Minute))); err != nil {
		t.Errorf("last simulated plan not written: %v", err)
	}
}

// TestRunRebuildsDamagedLedger: a damaged ledger, its base or its delta,
// is kept aside, both files, and made again from the plans, and planning
// goes on.
func TestRunRebuildsDamagedLedger(t *testing.T) {
	for _, tc := range []struct {
		name string
		file func(data.Dir) string
	}{{"base", data.Dir.Ledger}, {"delta", data.Dir.LedgerDelta}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			list := filepath.Join(dir, "servers.csv")
			MustRun(t, "-generate", "500", "-out", list, "-base", "2100-06-01T00:00:00Z")
			for m := range 10 {
				MustRun(t, "-servers", list, "-data", dir, "-at", time.Date(2100, 6, 1, 12, m, 0, 0, time.UTC).Format(time.RFC3339))
			}
			before, err := spool.ReadLedger(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tc.file(data.Dir(dir)), []byte("PDLEDGER garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
			MustRun(t, "-servers", list, "-data", dir, "-at", "2100-06-01T12:10:00Z")
			after, err := spool.ReadLedger(dir)
			if err != nil {
				t.Fatal(err)
			}
			for h, starts := range before.Hosts {
				if n := len(after.Hosts[h]); n < len(starts) {
					t.Errorf("host %s: %d starts after the rebuild, %d before", h, n, len(starts))
				}
			}
			for _, path := range []string{data.Dir(dir).Ledger(), data.Dir(dir).LedgerDelta()} {
				if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
					t.Errorf("damaged ledger kept as %v", aside)
				}
			}
		})
	}
}

// TestFirstPlan: the first plan of a fresh data directory says in plain
// words that the listed servers wait for their slot, and when; with
// -first-check-soon they are checked as soon as the host caps allow.
func TestFirstPlan(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "servers.csv")
	MustRun(t, "-generate", "3000", "-out", list, "-base", "2100-06-01T00:00:00Z", "-late", "0", "-big-host", "0")
	first := time.Date(2100, 6, 1, 12, 0, 0, 0, time.UTC)
	t.Run("S1_servers_wait_for_their_slot_said_plainly", func(t *testing.T) {
		out := MustRun(t, "-servers", list, "-data", filepath.Join(dir, "slots"), "-at", first.Format(time.RFC3339))
		checks, _, err := spool.ReadPlan(filepath.Join(dir, "slots"), first)
		if err != nil {
			t.Fatal(err)
		}
		waiting := fmt.Sprintf("first plan of this data directory: %d listed servers wait for their first check at their own slot", 3000-len(checks))
		for _, want := range []string{waiting,
			"the first at 2100-06-01T12:0", "plan -first-check-soon"} {
			if !strings.Contains(out, want) {
				t.Errorf("first plan said %q, want it to say %q", out, want)
			}
		}
		out = MustRun(t, "-servers", list, "-data", filepath.Join(dir, "slots"), "-at", first.Add(time.Minute).Format(time.RFC3339))
		if !strings.Contains(out, "servers wait for their first check, the next at") {
			t.Errorf("second plan said %q, want how many still wait", out)
		}
	})
	t.Run("S3_first_check_soon_as_the_caps_allow", func(t *testing.T) {
		data0 := filepath.Join(dir, "soon")
		checked := map[string]bool{}
		for m := range 3 {
			at := first.Add(time.Duration(m) * time.Minute)
			MustRun(t, "-servers", list, "-data", data0, "-at", at.Format(time.RFC3339), "-first-check-soon")
			checks, _, err := spool.ReadPlan(data0, at)
			if err != nil {
				t.Fatal(err)
			}
			perHost := map[string]int{}
			for _, c := range checks {
				checked[c.ID] = true
				if perHost[c.Host]++; perHost[c.Host] > 60 {
					t.Fatalf("host %s: more than one check a second in %s", c.Host, at.Format("15:04"))
				}
			}
		}
		// Each host's servers all, or as many as its hourly cap leaves to
		// routine checks (rule S3, NewReserve kept for new servers).
		servers, _, err := lists.ReadServers(list)
		if err != nil {
			t.Fatal(err)
		}
		onHost, done := map[string]int{}, map[string]int{}
		for _, s := range servers {
			onHost[s.Host()]++
			if checked[s.ID] {
				done[s.Host()]++
			}
		}
		for h, n := range onHost {
			if want := min(n, data.HostMaxPerHour-planner.NewReserve); done[h] != want {
				t.Errorf("host %s: %d of its %d servers planned in the first 3 minutes with -first-check-soon, want %d", h, done[h], n, want)
			}
		}
	})
}

// TestRunGitHubPaused: with -paused github:…, plan fetches the list into
// the data directory and plans none of the servers it names (rules R1, S8).
func TestRunGitHubPaused(t *testing.T) {
	t.Setenv(pause.TokenEnv, "tok")
	f := pausetest.New(t, "plugdir", "directory", map[string]string{"paused.txt": "maps\n"})
	dir := t.TempDir()
	at := time.Date(2100, 6, 1, 12, 0, 0, 0, time.UTC)
	MustRun(t, "-servers", filepath.Join("testdata", "servers-a.csv"), "-paused", "github:plugdir/directory/paused.txt@main",
		"-github-api", f.URL(), "-data", dir, "-at", at.Format(time.RFC3339), "-first-check-soon")
	checks, _, err := spool.ReadPlan(dir, at)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range checks {
		ids[c.ID] = true
	}
	if ids["maps"] || !ids["weather"] {
		t.Errorf("planned %v: want weather, not the paused maps", ids)
	}
	if _, err := os.Stat(data.Dir(dir).PausedCopy()); err != nil {
		t.Errorf("no local copy of the paused list: %v", err)
	}
}
