package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/planner"
	"plug.directory/prober/runner"
	"plug.directory/prober/site"
	"plug.directory/prober/site/record"
)

var minute0 = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

// base is a data directory in every state a flip may find it in: a
// snapshot and deltas after it, a ledger and a plan, a minute run (its
// marker), Parquet parts, and a published site with its record.
type base struct {
	root    string // holds data/, servers.csv, out/
	servers []data.Server
	truth   map[string]map[string]data.Outcome // by id: start (RFC 3339 ms) -> outcome, every result recorded
	states  map[string]data.State
	out     map[string][]byte // the published tree
}

func (b *base) dir() string  { return filepath.Join(b.root, "data") }
func (b *base) list() string { return filepath.Join(b.root, "servers.csv") }
func (b *base) outDir() string {
	return filepath.Join(b.root, "out")
}

// baseServers returns the base's 12 servers on 4 hosts, with ids one digit
// apart, as s00500 and s01500: a flip that moved a result to another
// server would show.
func baseServers() []data.Server {
	var servers []data.Server
	for i := range 12 {
		id := fmt.Sprintf("s%05d", 500+1000*(i%3)+i)
		servers = append(servers, data.Server{ID: id, Rank: i + 1, URL: "https://h" + fmt.Sprint(i%4) + ".example/" + id,
			Added: minute0.Add(-48 * time.Hour)})
	}
	return servers
}

// writeList writes servers as the ranked list at path.
func writeList(tb testing.TB, path string, servers []data.Server) {
	tb.Helper()
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, servers); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// MustBase builds the base directory under tb's temporary directory.
func MustBase(tb testing.TB) *base {
	tb.Helper()
	b := &base{root: tb.TempDir(), servers: baseServers(), truth: map[string]map[string]data.Outcome{}}
	writeList(tb, b.list(), b.servers)
	// Four folded runs: two in a snapshot (rebuilt), two deltas after it.
	for r := range 4 {
		at := minute0.Add(-3*time.Hour + time.Duration(r)*time.Minute)
		j, err := spool.CreateJournal(b.dir(), fmt.Sprintf("run-%d", r))
		if err != nil {
			tb.Fatal(err)
		}
		for i, s := range b.servers {
			res := b.result(s, at.Add(time.Duration(i)*time.Second), data.Outcomes[(i+r)%5])
			if res.Status == data.Refused {
				res.RetryAfter = at.Add(time.Hour)
			}
			if err := j.Append(res); err != nil {
				tb.Fatal(err)
			}
		}
		j.Close()
		if _, err := history.Fold(b.dir(), minute0, slog.New(slog.DiscardHandler)); err != nil {
			tb.Fatal(err)
		}
		if r == 1 {
			if _, err := history.RebuildState(b.dir(), minute0); err != nil {
				tb.Fatal(err)
			}
			os.RemoveAll(data.Dir(b.dir()).Damaged())
		}
	}
	// A plan and its ledger, and the minute run.
	if err := b.plan(b.dir(), minute0); err != nil {
		tb.Fatal(err)
	}
	if _, err := b.run(b.dir(), minute0); err != nil {
		tb.Fatal(err)
	}
	if err := b.plan(b.dir(), minute0.Add(time.Minute)); err != nil {
		tb.Fatal(err)
	}
	if _, err := b.publish(b.dir()); err != nil {
		tb.Fatal(err)
	}
	states, bad, err := history.LoadStates(b.dir(), minute0)
	if err != nil || len(bad) > 0 {
		tb.Fatal(err, bad)
	}
	b.states = states
	b.out = testutil.MustTree(tb, b.outDir())
	return b
}

// result is a check of s, recorded in the truth.
func (b *base) result(s data.Server, at time.Time, o data.Outcome) data.Result {
	if b.truth[s.ID] == nil {
		b.truth[s.ID] = map[string]data.Outcome{}
	}
	b.truth[s.ID][at.UTC().Format(time.RFC3339Nano)] = o
	return data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: o, Detail: "d " + s.ID,
		Started: at, Finished: at.Add(time.Second), Duration: time.Second}
}

// plan plans minute in dir as plan does: a damaged ledger is rebuilt
// from the plans.
func (b *base) plan(dir string, minute time.Time) error {
	unlock, err := spool.LockPlans(dir)
	if err != nil {
		return err
	}
	defer unlock()
	l, err := spool.ReadLedger(dir)
	if errors.Is(err, spool.ErrLedgerCorrupt) {
		if _, err := spool.KeepLedgerAside(dir, ".corrupt"); err != nil {
			return err
		}
		l, _ = spool.RebuildLedger(dir, minute)
	} else if err != nil {
		return err
	}
	p := planner.Planner{Now: func() time.Time { return minute.Add(-30 * time.Second) }, Logger: slog.New(slog.DiscardHandler)}
	rep, err := p.Plan(minute, planner.Input{Servers: b.servers,
		StatesOf: func(ids []string) (map[string]data.State, error) {
			states, _, err := history.LoadStatesOf(dir, ids, minute0)
			return states, err
		}}, l)
	if err != nil {
		return err
	}
	if err := spool.WriteLedger(dir, l); err != nil {
		return err
	}
	return spool.WritePlan(dir, minute, rep.Checks)
}

// run runs minute in dir, each check answering as the truth says.
func (b *base) run(dir string, minute time.Time) (runner.Summary, error) {
	check := runner.CheckerFunc(func(_ context.Context, c data.PlannedCheck) data.Result {
		// The runner stamps the start itself: the truth is the minute.
		r := b.result(data.Server{ID: c.ID, URL: c.URL}, c.At, data.Working)
		b.truth[c.ID]["run "+c.At.Truncate(time.Minute).Format(time.RFC3339)] = data.Working
		return r
	})
	var mu sync.Mutex
	return runner.Run(context.Background(), runner.Config{Dir: dir, Checker: runnerLocked(&mu, check),
		Clock: testutil.NewJumpClock(minute.Add(-time.Second)), Logger: slog.New(slog.DiscardHandler), PID: 4242}, minute)
}

// runnerLocked serialises check, which writes the truth.
func runnerLocked(mu *sync.Mutex, check runner.CheckerFunc) runner.CheckerFunc {
	return func(ctx context.Context, c data.PlannedCheck) data.Result {
		mu.Lock()
		defer mu.Unlock()
		return check(ctx, c)
	}
}

func (b *base) publish(dir string) (site.Stats, error) {
	return site.Publish(context.Background(), site.Config{Contact: "probe@example.org", DataDir: dir, ServersPath: b.list(),
		OutDir: filepath.Join(filepath.Dir(dir), "out"), Now: func() time.Time { return minute0.Add(90 * time.Second) },
		Logger: slog.New(slog.DiscardHandler), Workers: 2, NoHTML: true})
}

// attributed fails tb for a published check not among its server's own
// results: a flip must never move a result to another server.
func (b *base) attributed(tb testing.TB, out string) {
	tb.Helper()
	for rel, body := range testutil.MustTree(tb, out) {
		if !strings.HasPrefix(rel, "servers/") || !strings.HasSuffix(rel, ".json") {
			continue
		}
		var sf record.ServerFile
		if err := json.Unmarshal(body, &sf); err != nil {
			tb.Fatalf("%s: %v", rel, err)
		}
		if want := strings.TrimSuffix(strings.TrimPrefix(rel, "servers/"), ".json"); sf.ID != want {
			tb.Fatalf("%s holds server %q", rel, sf.ID)
		}
		for _, c := range sf.History {
			o, ok := b.truth[sf.ID][c.Started.UTC().Format(time.RFC3339Nano)]
			if !ok {
				o, ok = b.truth[sf.ID]["run "+c.Started.UTC().Truncate(time.Minute).Format(time.RFC3339)]
			}
			if !ok || o != c.Status {
				tb.Fatalf("%s shows a check at %s %s that server never had", rel, c.Started, c.Status)
			}
		}
	}
}

// TestFlippedByte: one random byte flipped in any file the prober keeps
// (state snapshot, state delta, ledger base and delta, Parquet part, site
// record, the directory feed's record, minute marker) never panics a
// plan, a run or a publish, never stops the next plan, and never shows a
// result under another server; the
// state comes back as it was, also when it is first read by ids,
// by its blocks, as a plan of a long list reads it (every other flip).
func TestFlippedByte(t *testing.T) {
	t.Parallel() // its own directories; mostly waits for fsyncs, which overlap
	b := MustBase(t)
	// 20 flips of each of the 8 files (60 before), each followed by the
	// next plan, run and publish at full size: fewer repetitions, so that
	// the package's full run fits its time on a loaded 2-core machine
	// with the race detector.
	flips := 20
	if testing.Short() {
		flips = 1 // one of each file
	}
	one := func(pattern string) func(dir string) string {
		return func(dir string) string {
			m, _ := filepath.Glob(filepath.Join(dir, pattern))
			if len(m) == 0 {
				t.Fatalf("no %s in the base directory", pattern)
			}
			return m[len(m)-1]
		}
	}
	for _, tc := range []struct {
		name    string
		file    func(dir string) string
		samePub bool // the site published after it is the base's
		state   bool // a state file: every other flip, it is read by ids first
	}{
		{"state_snapshot", one("state/states.bin"), true, true},
		{"state_delta", one("state/delta-*.bin"), true, true},
		{"ledger", one("plans/ledger.bin"), false, false},
		{"ledger_delta", one("plans/ledger-delta.bin"), false, false},
		{"parquet_part", one("results/date=*/part-*.parquet"), false, false},
		{"site_record", one("site/state.bin"), true, false},
		{"minute_marker", one("run/minutes/*.json"), true, false},
		{"site_feed", one("site/feed.json"), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(12, uint64(len(tc.name))))
			var damaged, rebuilt int
			var worst time.Duration
			for i := range flips {
				root := filepath.Join(t.TempDir(), "c")
				testutil.CopyTree(t, b.root, root)
				dir := filepath.Join(root, "data")
				path := tc.file(dir)
				body, _ := os.ReadFile(path)
				at := rng.IntN(len(body))
				body[at] ^= byte(1 + rng.IntN(255))
				os.WriteFile(path, body, 0o644)
				if tc.name == "parquet_part" {
					// A publish reads a part again only when it changes
					// size, or when it rebuilds: make it rebuild.
					os.Remove(filepath.Join(dir, "site", "state.bin"))
				}
				what := fmt.Sprintf("flip %d at byte %d of %s", i, at, filepath.Base(path))

				if tc.state && i%2 == 0 {
					// As a plan of a long list reads it, only some
					// blocks: what it reads is intact or rebuilt, damage
					// it passes over is left to the read of every state.
					ids := []string{b.servers[0].ID, b.servers[7].ID}
					some, _, err := history.LoadStatesOf(dir, ids, minute0)
					if err != nil || len(some) != len(ids) || !reflect.DeepEqual(some[ids[0]], b.states[ids[0]]) || !reflect.DeepEqual(some[ids[1]], b.states[ids[1]]) {
						t.Fatalf("%s: states of %v: %v %v; want those before", what, ids, some, err)
					}
				}
				start := time.Now()
				states, bad, err := history.LoadStates(dir, minute0)
				if d := time.Since(start); d > worst {
					worst = d
				}
				if err != nil || !reflect.DeepEqual(states, b.states) {
					t.Fatalf("%s: states %v %v; want those before", what, bad, err)
				}
				if len(bad) > 0 {
					rebuilt++
				}
				if err := b.plan(dir, minute0.Add(2*time.Minute)); err != nil {
					t.Fatalf("%s: the next plan: %v", what, err)
				}
				if _, err := b.run(dir, minute0); err != nil && !errors.Is(err, runner.ErrMinuteTaken) {
					t.Fatalf("%s: a run of the minute: %v", what, err)
				}
				st, err := b.publish(dir)
				if err != nil {
					t.Fatalf("%s: publish: %v", what, err)
				}
				if len(st.Bad) > 0 {
					damaged++
				}
				out := filepath.Join(root, "out")
				b.attributed(t, out)
				if tc.samePub && !reflect.DeepEqual(testutil.MustTree(t, out), b.out) {
					t.Fatalf("%s: the site published differs from the one before", what)
				}
				os.RemoveAll(root)
			}
			t.Logf("%d flips: %d state rebuilds, %d publishes naming bad input; slowest state read %s", flips, rebuilt, damaged, worst)
		})
	}
}
