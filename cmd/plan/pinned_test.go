package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
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
	"plug.directory/prober/planner/sim"
)

// pinnedShapes are the shapes of address a ranked list may hold besides
// the usual one, of the host (%[1]s, uppercased %[3]s) and the path (%[2]s):
// the planner reads the host and the address key of each by a fast path or
// the slow one.
var pinnedShapes = []string{
	"HTTPS://%[3]s/%[2]s",
	"https://%[1]s:443/%[2]s",
	"https://%[1]s:8443/%[2]s",
	"https://%[1]s./%[2]s",
	"https://%[1]s/%[2]s#part",
	"https://%[1]s/%[2]s%%20x",
	"https://%[1]s?q=%[2]s",
	"https://user@%[1]s/%[2]s",
	"http://%[1]s/%[2]s",
	"https://%[1]s/%[2]s/é",
	"https://%[1]s:/%[2]s",
	"https://%[1]s%.0[2]s",
}

// pinnedURL spells the generated address u in shape i of 40: one of
// pinnedShapes, else the usual one.
func pinnedURL(u string, i int) string {
	if i%40 >= len(pinnedShapes) {
		return u
	}
	host, path, _ := strings.Cut(strings.TrimPrefix(u, "https://"), "/")
	return fmt.Sprintf(pinnedShapes[i%40], host, path, strings.ToUpper(host))
}

// TestPlanOutputPinned plans minutes of 20,000 generated servers, a fifth
// listed again at an address, a host beyond its caps, new, failing, paused
// and lost checks, addresses of every shape, and pins each minute's plan
// file and ledger (its records: the file holds the hosts in map order) by
// their SHA-256 in testdata/pinned.txt: making the
// planner cheaper must not change a byte it writes.
// -update rewrites the file, for a change meant to change plans. It costs
// some 3 CPU-seconds, most of them the first plan of the 20,000: -short
// leaves it to make test (or go test -run TestPlanOutputPinned ./cmd/plan,
// after a change to the planner).
func TestPlanOutputPinned(t *testing.T) {
	if testing.Short() {
		t.Skip("pins 6 minutes of plans of 20,000 servers, some 3 CPU-seconds: make test runs it")
	}
	servers := sim.Generate(sim.GenConfig{Servers: 20_000, BigHost: 1000, Base: benchStart.Add(-24 * time.Hour),
		Late: 0.01, NoURL: 0.01, Shared: 0.2, Seed: 5})
	for i := range servers {
		if s := &servers[i]; s.URL != "" && i%3 == 0 {
			s.URL = pinnedURL(s.URL, i/3)
		}
	}
	cfg := mustPlanDirOf(t, servers)
	var paused []string
	for i := 0; i < len(servers); i += 500 {
		paused = append(paused, servers[i].ID)
	}
	cfg.Paused = mustWriteLines(t, filepath.Join(t.TempDir(), "paused.txt"), paused)
	cfg.Now = func() time.Time { return cfg.At.Add(-time.Minute) }
	var got strings.Builder
	for m := range 6 {
		cfg.At = benchStart.Add(time.Duration(1+m) * time.Minute)
		if m == 2 {
			// 300 servers listed anew, one in a hundred gone.
			more := sim.Generate(sim.GenConfig{Servers: 300, Hosts: 50, Base: cfg.At.Add(-time.Minute), Shared: 0.2, Seed: 6})
			list := slices.DeleteFunc(slices.Clone(servers), func(s data.Server) bool { return s.Rank%100 == 7 })
			for _, s := range more {
				s.ID, s.Added = "late-"+s.ID, cfg.At.Add(-time.Minute)
				list = append(list, s)
			}
			lists.SortServers(list)
			mustWriteList(t, cfg.Servers, list)
		}
		if err := planMinute(context.Background(), cfg, io.Discard, discard()); err != nil {
			t.Fatal(err)
		}
		checks, bad, err := spool.ReadPlan(cfg.Data, cfg.At)
		if err != nil || len(bad) > 0 {
			t.Fatalf("read plan: %v %v", err, bad)
		}
		fmt.Fprintf(&got, "%s %d checks plan %s ledger %s\n", cfg.At.Format("15:04"), len(checks),
			fileSum(t, data.Dir(cfg.Data).Plan(cfg.At)), ledgerSum(t, cfg.Data))
		// What the checks of every other minute found: failing one in
		// seven; the other minutes' checks are lost, planned again.
		if m%2 == 1 {
			continue
		}
		results := resultsOf(checks, func(k int) bool { return k%7 == 0 })
		if len(results) > 0 {
			if err := spooltest.MustJournal(t, cfg.Data, "test-"+results[0].ID, results...).Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	testutil.Golden(t, "testdata/pinned.txt", []byte(got.String()))
}

// fileSum returns the SHA-256 of the file at path, in hex.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// ledgerSum returns the SHA-256 of the records of the ledger of the data
// directory dir, its hosts in the order of their names, in hex.
func ledgerSum(t *testing.T, dir string) string {
	t.Helper()
	l, err := spool.ReadLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	fmt.Fprintln(h, l.Created, l.LastMinute)
	for _, name := range slices.Sorted(maps.Keys(l.Hosts)) {
		fmt.Fprintln(h, name, l.Hosts[name])
	}
	for _, s := range l.Servers {
		fmt.Fprintf(h, "%+v\n", s)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// mustWriteList writes servers as the ranked list at path.
func mustWriteList(t *testing.T, path string, servers []data.Server) {
	t.Helper()
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, servers); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
