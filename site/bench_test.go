package site

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

var (
	benchServers = flag.Int("bench.servers", 1_000_000, "servers listed in the publish benchmarks")
	benchChanged = flag.Int("bench.changed", 1_000, "servers with a new result per run in BenchmarkPublishIncremental")
	benchChecks  = flag.Int("bench.checks", 1, "checks, an hour apart, each server checked in BenchmarkPublishIncremental has before timing (720: a month of an hourly server)")
	benchProfile = flag.String("bench.profile", "", "`DIR` where BenchmarkPublishIncremental writes the CPU and memory profiles of each timed publish (minute-N.prof, minute-N.mem; read them together with go tool pprof)")
)

// benchList writes a ranked list of n servers, twenty on a host.
func benchList(tb testing.TB, f *fixture, n int) []data.Server {
	tb.Helper()
	servers := make([]data.Server, n)
	for i := range servers {
		servers[i] = data.Server{ID: fmt.Sprintf("srv%07d", i), Rank: i + 1,
			URL: fmt.Sprintf("https://h%d.example.com/mcp/%d", i/20, i), Added: fixNow.Add(-90 * 24 * time.Hour)}
	}
	fl, err := os.Create(f.list)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(fl, 1<<20)
	if err := lists.WriteServers(w, servers); err != nil {
		tb.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := fl.Close(); err != nil {
		tb.Fatal(err)
	}
	return servers
}

// benchLedger returns a planner's ledger naming every server's next check.
func benchLedger(servers []data.Server) *spool.Ledger {
	l := spool.NewLedger()
	l.Created, l.LastMinute = fixNow.Add(-48*time.Hour).Unix(), fixNow.Unix()
	for i, s := range servers {
		cad := data.Tier(s.Rank)
		l.Servers = append(l.Servers, spool.LedgerServer{ID: s.ID, Rank: int32(s.Rank), URLHash: spool.URLHash(s.URL), FirstSeen: l.Created,
			NextDue: fixNow.Add(time.Duration(i%86400) * time.Second).Unix(), Cadence: int32(cad / time.Second)})
	}
	return l
}

// benchState writes the site's record of servers as a previous publish left
// it, without publishing a million files first: an incremental run reads
// only the record and the files of the servers it renders. None is
// checked yet (a checked one without its file would be a lost record):
// the warm-up publish gives a pool of them their first check.
func benchState(tb testing.TB, f *fixture, servers []data.Server) {
	tb.Helper()
	st := newStore()
	var err error
	// The list's signature is left out: the warm-up publish reads the
	// list, as the run that first saw these servers did, so the files it
	// writes have their addresses (not those of servers never listed).
	if st.Meta.Paused, err = sigOf(f.paused); err != nil {
		tb.Fatal(err)
	}
	rows, ids := make([]row, len(servers)), make([]string, len(servers))
	for i, s := range servers { // ids are zero-padded: already sorted
		ids[i] = s.ID
		rows[i] = row{Rank: s.Rank, URLSum: spool.URLHash(s.URL), status: statusIndex(data.Pending), Uptime7d: -1, Tools: -1,
			PlanNext: fixNow.Add(time.Duration(i%86400)*time.Second).Unix() * 1000}
	}
	st.setRows(rows, ids)
	st.sortOrder()
	enc, err := st.encode()
	if err != nil {
		tb.Fatal(err)
	}
	if err := durable.WriteFileAtomic(data.Dir(f.dir).SiteStore(), enc.file(), 0o644); err != nil {
		tb.Fatal(err)
	}
	// The record names no parts of the index yet: the warm-up publish
	// writes them all.
	w := newWriter(f.out)
	if err := w.stage(filepath.Join(f.out, "index.json"), encodeIndex(st)); err != nil {
		tb.Fatal(err)
	}
	if err := w.flush(); err != nil {
		tb.Fatal(err)
	}
}

// lookedFor gives the servers whose files the publish at f.now looks for
// (findLost) files where they have none, but those of checked (their
// first check makes them): in a site every listed server has its files,
// where the benchmark writes those of the servers it checks only.
func lookedFor(b *testing.B, f *fixture, servers []data.Server, checked map[string]bool) {
	start := window(f.now, filesLookedFor, len(servers))
	for j := range min(filesLookedFor, len(servers)) {
		id := servers[(start+j)%len(servers)].ID
		if checked[id] {
			continue
		}
		for _, rel := range serverSet(id) {
			path := filepath.Join(f.out, filepath.FromSlash(rel))
			if _, err := os.Stat(path); err == nil {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPublishIncremental publishes a list of -bench.servers servers of
// which -bench.changed, checked before, have a new result since the last run
// (and a new next check in the ledger): the every-minute case. Goal: at
// most 2 s at a million servers. On ext4 without a journal, a new file's
// inode is not one freed in the last minute: a run started sooner than
// that after another's clean-up (html=true right after html=false, or
// back-to-back runs) pays for passing over those, the copy more than the
// publish, and reads x-copy-CPU low until the disk settles. Leave a
// minute between runs there, or run one html setting at a time.
func BenchmarkPublishIncremental(b *testing.B) {
	for _, html := range []bool{false, true} {
		b.Run(fmt.Sprintf("html=%v", html), func(b *testing.B) { benchIncremental(b, html) })
	}
}

func benchIncremental(b *testing.B, html bool) {
	f := newFixture(b)
	servers := benchList(b, f, *benchServers)
	ledger := benchLedger(servers)
	rng := rand.New(rand.NewPCG(1, 2))
	var cpu time.Duration
	var peakHeap, peakRSS uint64
	var allocs, allocated uint64
	cfg := f.config()
	cfg.Workers, cfg.NoHTML = 16, !html
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// Steady state: the servers checked each minute were checked before,
	// so their files exist and their badges stay as they are. A pool of
	// ten times the changed servers, spread over the ids as a minute's
	// checks are (every stride-th), gets its first -bench.checks checks
	// before timing: the last an hour before the first minute, the ones
	// before an hour apart and spread over the hour from server to
	// server, so that each minute's uptime windows move on for a few of
	// them, as in a fleet checked around the clock, not for all at once.
	pool := min(10**benchChanged, len(servers))
	stride := len(servers) / pool
	benchState(b, f, servers)
	warm := make([]data.Result, 0, pool**benchChecks)
	checked := map[string]bool{}
	for j := range pool {
		for h := range *benchChecks {
			at := fixNow.Add(-time.Duration(h+1) * time.Hour)
			if h > 0 {
				at = at.Add(-time.Duration(j%60) * time.Minute)
			}
			warm = append(warm, result(servers[j*stride], at, data.Working, ""))
		}
		checked[servers[j*stride].ID] = true
	}
	journalMany(b, f, warm)
	if err := spool.WriteLedger(f.dir, ledger); err != nil {
		b.Fatal(err)
	}
	lookedFor(b, f, servers, checked)
	if st, err := Publish(context.Background(), cfg); err != nil || st.Rebuilt || st.Rendered > 2*pool {
		b.Fatalf("warm-up publish: %+v, %v", st, err)
	}
	for j := range pool {
		ageOlder(b, f.dir, servers[j*stride].ID, j*7919%(*benchChecks))
	}
	var copyCPU, atomicCPU time.Duration
	var rendered int
	var wrote, copied int64
	copyDir, atomicDir := filepath.Join(b.TempDir(), "copy"), filepath.Join(b.TempDir(), "atomic")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		f.now = fixNow.Add(time.Duration(i+1) * time.Minute)
		rs := make([]data.Result, *benchChanged)
		changed := map[string]bool{}
		for k := range rs {
			j := rng.IntN(pool) * stride
			rs[k] = result(servers[j], f.now.Add(-30*time.Second), data.Working, "")
			ledger.Servers[j].NextDue = f.now.Add(data.Tier(servers[j].Rank)).Unix()
			changed[servers[j].ID] = true
		}
		f.results(rs...)
		if err := spool.WriteLedger(f.dir, ledger); err != nil {
			b.Fatal(err)
		}
		lookedFor(b, f, servers, checked)
		b.StartTimer()
		pub := publishApart(b, cfg, i)
		b.StopTimer()
		cpu += pub.CPU
		wrote += pub.Written
		peakHeap, peakRSS = max(peakHeap, pub.PeakHeap), max(peakRSS, pub.PeakRSS)
		allocs, allocated = allocs+pub.Allocs, allocated+pub.Allocated
		rels := changedFiles(b, f.out, changed, html)
		c, n := copyChanged(b, f.out, copyDir, rels)
		copyCPU += c
		copied += n
		atomicCPU += replaceApart(b, f.out, atomicDir, rels)
		b.StartTimer()
		if pub.Rebuilt {
			b.Fatal("rebuilt: the benchmark's state was not taken")
		}
		rendered += pub.Rendered
	}
	b.ReportMetric(float64(rendered)/float64(b.N), "rendered/op")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "CPU-ms/op")
	b.ReportMetric(float64(wrote)/(1<<20)/float64(b.N), "written-MB/op")
	if copyCPU > 0 && copied > 0 {
		b.ReportMetric(float64(cpu)/float64(copyCPU), "x-copy-CPU")
		b.ReportMetric(float64(wrote)/float64(copied), "x-copy-bytes")
		b.ReportMetric(float64(atomicCPU)/float64(copyCPU), "atomic-x-copy-CPU")
		b.ReportMetric(float64(cpu)/float64(atomicCPU), "x-atomic-CPU")
	}
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peakRSS)/(1<<20), "peak-RSS-MB")
	b.ReportMetric(float64(allocated)/float64(b.N), "B/op")
	b.ReportMetric(float64(allocs)/float64(b.N), "allocs/op")
}

// apart is what a publish in a process of its own (publishApart) did and
// cost: whether it rebuilt the site and how many servers it rendered, the
// CPU and peak resident memory of its process, and, as it measured them,
// its peak heap, the bytes it passed to write calls and its allocations.
type apart struct {
	Rebuilt           bool
	Rendered          int
	CPU               time.Duration
	PeakRSS, PeakHeap uint64
	Allocs, Allocated uint64
	Written           int64
	Err               string
}

// publishApart publishes cfg, the benchmark's minute-th, in a process of
// its own, as cron runs each minute's: this test binary again, running
// TestPublishApart (profiled with -bench.profile). In the
// benchmark's process a publish would start with the set-up's heap
// (a million servers' list and ledger, 300 MB): the collector would
// leave it alone until its heap doubled, where a publish's process starts
// with an empty heap and collects as it grows.
func publishApart(b *testing.B, cfg Config, minute int) apart {
	var args []string
	if *benchProfile != "" {
		args = append(args, "-test.cpuprofile="+filepath.Join(*benchProfile, fmt.Sprintf("minute-%d.prof", minute)),
			"-test.memprofile="+filepath.Join(*benchProfile, fmt.Sprintf("minute-%d.mem", minute)))
	}
	out, cpu := runApart(b, "TestPublishApart", apartEnv, apartConfig{DataDir: cfg.DataDir, ServersPath: cfg.ServersPath, PausedPath: cfg.PausedPath, OutDir: cfg.OutDir,
		Now: cfg.Now(), Workers: cfg.Workers, NoHTML: cfg.NoHTML, Contact: cfg.Contact}, args...)
	var a apart
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&a); err != nil || a.Err != "" {
		b.Fatalf("publish apart: %v%s: %s", err, a.Err, out)
	}
	a.CPU = cpu
	return a
}

// runApart runs the test name of this test binary in a process of its
// own, its configuration c as JSON in a file the environment variable env
// names (configApart), and returns what it printed and the CPU it took.
func runApart(b *testing.B, name, env string, c any, args ...string) (string, time.Duration) {
	cj, err := json.Marshal(c)
	if err != nil {
		b.Fatal(err)
	}
	// In a file: thousands of paths are more than one variable of the
	// environment may hold (128 KB).
	path := filepath.Join(b.TempDir(), name+".json")
	if err := os.WriteFile(path, cj, 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^" + name + "$", "-test.count=1", "-test.v=false"}, args...)...)
	cmd.Env = append(os.Environ(), env+"="+path)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v: %s%s", name, err, out.String(), errOut.String())
	}
	return out.String(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// configApart returns the configuration runApart gave a test in env, and
// skips t when there is none: what is skipped is the benchmark's step
// that runs it apart.
func configApart[T any](t *testing.T, env, step string) T {
	var c T
	path := os.Getenv(env)
	if path == "" {
		t.Skip(step + ", in a process of its own: run by BenchmarkPublishIncremental")
	}
	j, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// apartEnv carries a publish's configuration to TestPublishApart.
const apartEnv = "SITE_PUBLISH_APART"

// apartConfig is the part of a Config a publish apart is given.
type apartConfig struct {
	DataDir, ServersPath, PausedPath, OutDir string
	Now                                      time.Time
	Workers                                  int
	NoHTML                                   bool
	Contact                                  string
}

// TestPublishApart is a publish started by publishApart, in a process of
// its own; it is skipped otherwise. It prints what it did and measured
// as JSON.
func TestPublishApart(t *testing.T) {
	ac := configApart[apartConfig](t, apartEnv, "a benchmark's publish")
	cfg := Config{DataDir: ac.DataDir, ServersPath: ac.ServersPath, PausedPath: ac.PausedPath, OutDir: ac.OutDir,
		Now: func() time.Time { return ac.Now }, Logger: slog.New(slog.DiscardHandler), Workers: ac.Workers, NoHTML: ac.NoHTML, Contact: ac.Contact}
	var a apart
	stopHeap := testutil.HeapPeak()
	st, err := Publish(context.Background(), cfg)
	a.PeakHeap, _ = stopHeap()
	if err != nil {
		a.Err = err.Error()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	a.Rebuilt, a.Rendered, a.Allocs, a.Allocated, a.Written, a.PeakRSS = st.Rebuilt, st.Rendered, ms.Mallocs, ms.TotalAlloc, writtenBytes(), ownPeakRSS()
	if err := json.NewEncoder(os.Stdout).Encode(a); err != nil {
		t.Fatal(err)
	}
}

// ageOlder rewrites the older-checks file of the server id, if it has
// one, as renders of a check each leave it: its checks as they are, the
// file written anew k renders ago or since (olderChange), a record
// appended for each render after. The warm-up publish wrote each one
// anew, where a server checked for months has one written anew some
// hundreds of renders ago; the pool's servers get k from 0 to
// -bench.checks, as a fleet's files are of every age.
func ageOlder(b *testing.B, dataDir, id string, k int) {
	path := olderPath(dataDir, id)
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		b.Fatal(err)
	}
	now, err := readOlder(text)
	if err != nil || len(now.checks) == 0 {
		b.Fatalf("older checks of %s: %d, %v", id, len(now.checks), err)
	}
	n := len(now.checks)
	// k earlier checks an hour apart, cut one a render as the checks as
	// they are now come in.
	all := append(hourly(now.checks[0].At-int64(k)*3_600_000, k), now.checks...)
	file := encodeOlder(all[:n])
	old := olderLog{checks: all[:n], end: int64(len(file))}
	for j := 1; j <= k; j++ {
		rec, whole := olderChange(old, all[j:n+j])
		if !whole {
			rec = append(file[:old.end], rec...)
		}
		file, old = rec, olderLog{checks: all[j : n+j], end: int64(len(rec))}
	}
	if back, err := readOlder(file); err != nil || !slices.EqualFunc(back.checks, now.checks, samePastCheck) {
		b.Fatalf("older checks of %s aged: %d checks read back of %d (%v)", id, len(back.checks), n, err)
	}
	if err := os.WriteFile(path, file, 0o644); err != nil {
		b.Fatal(err)
	}
}

// journalMany writes rs as one finished run's journal, appended from many
// goroutines at once so that they share their fsyncs: a month of checks of
// a thousand servers is 720,000 lines, an fsync each one after the other.
func journalMany(b *testing.B, f *fixture, rs []data.Result) {
	j, err := spool.CreateJournal(f.dir, "run-warm-up")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	const writers = 64
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(rs); i += writers {
				if err := j.Append(rs[i]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
}

// changedFiles returns the files a publish rewrites for the servers
// changed (their file, strip and page, the part of the index each is in)
// and the index's head and status, relative to out: what a floor of that
// publish copies (copyChanged, replaceApart).
func changedFiles(b *testing.B, out string, changed map[string]bool, html bool) []string {
	rels := []string{"index.json", "status.json"}
	var head record.IndexFile
	hb, err := os.ReadFile(filepath.Join(out, "index.json"))
	if err != nil || json.Unmarshal(hb, &head) != nil {
		b.Fatalf("read index.json: %v", err)
	}
	parts := map[string]bool{}
	for id := range changed {
		k, found := slices.BinarySearchFunc(head.Parts, id, func(p record.IndexPart, id string) int { return strings.Compare(p.First, id) })
		if !found {
			k--
		}
		parts[head.Parts[k].Path] = true
	}
	rels = append(rels, slices.Sorted(maps.Keys(parts))...)
	for id := range changed {
		rels = append(rels, filepath.Join("servers", id+".json"), filepath.Join(strip.Dir, id+".svg"))
		if html {
			rels = append(rels, filepath.Join("servers", id+".html"))
		}
	}
	return rels
}

// copyChanged copies the files rels under out with `cp --parents`: the
// floor of any publish of those changes, measured in the same run so
// that a publish's cost reads as a ratio (x-copy-CPU, x-copy-bytes). It
// returns the CPU the copy took and the bytes it wrote (the files'
// sizes). A command of its own, not a copy in this process, whose CPU
// would take a share of the garbage collection of the servers set up
// here: that floor moved from 27 to 50 ms for the same files from one
// copy to the next.
func copyChanged(b *testing.B, out, to string, rels []string) (time.Duration, int64) {
	_, size := weigh(b, out, rels)
	if err := os.MkdirAll(to, 0o755); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("cp", append([]string{"--parents", "--target-directory", to}, rels...)...)
	cmd.Dir = out
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("cp --parents: %v: %s", err, msg)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), size
}

// replaceApart copies the files rels under out to the same paths under
// to as rule P3 has a publish write them, in a process of its own
// (TestReplaceApart): each to a temporary file, one syncfs, then each
// renamed over its path and its directory fsynced. It returns the CPU the process took: the floor of a
// publish of those changes that computes nothing (atomic-x-copy-CPU
// against the copy, x-atomic-CPU the publish against it).
func replaceApart(b *testing.B, out, to string, rels []string) time.Duration {
	_, cpu := runApart(b, "TestReplaceApart", replaceEnv, replaceConfig{From: out, To: to, Rels: rels})
	return cpu
}

// replaceEnv carries what TestReplaceApart copies.
const replaceEnv = "SITE_REPLACE_APART"

// replaceConfig is what TestReplaceApart copies: the files Rels under
// From to the same paths under To.
type replaceConfig struct {
	From, To string
	Rels     []string
}

// TestReplaceApart is the copy replaceApart starts in a process of its
// own; it is skipped otherwise.
func TestReplaceApart(t *testing.T) {
	rc := configApart[replaceConfig](t, replaceEnv, "a benchmark's floor")
	made := map[string]bool{}
	temps := make([]string, len(rc.Rels))
	for k, rel := range rc.Rels {
		b, err := os.ReadFile(filepath.Join(rc.From, rel))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(rc.To, rel)
		if dir := filepath.Dir(path); !made[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			made[dir] = true
		}
		if temps[k], err = (durable.Files{}).WriteTemp(path, 0o644, false, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if err := durable.SyncFS(rc.To); err != nil {
		t.Fatal(err)
	}
	for k, rel := range rc.Rels {
		if err := os.Rename(temps[k], filepath.Join(rc.To, rel)); err != nil {
			t.Fatal(err)
		}
	}
	for dir := range made {
		if err := durable.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
	}
}

// writtenBytes returns the bytes the process has passed to write calls
// (Linux /proc/self/io wchar), 0 where it cannot be read.
func writtenBytes() int64 { return int64(procSelf("io", "wchar:")) }

// ownPeakRSS returns the process's peak resident memory (Linux
// /proc/self/status VmHWM), 0 where it cannot be read. A child's rusage
// would not do: its Maxrss counts the parent's memory it shared until
// it ran its program.
func ownPeakRSS() uint64 { return procSelf("status", "VmHWM:") << 10 }

// procSelf returns the number on the line of /proc/self/file that starts
// with key (a unit after it left out), 0 where it cannot be read.
func procSelf(file, key string) uint64 {
	b, err := os.ReadFile("/proc/self/" + file)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime returns the user and system time the process has used: on a
// shared machine a steadier measure of a publish than its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPeakRSS reports the process's peak resident memory, setup
// included.
func reportPeakRSS(b *testing.B) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	}
}

// BenchmarkPublishFull publishes -bench.servers servers from nothing, with
// no history: every server's JSON and badge written (no HTML preview).
func BenchmarkPublishFull(b *testing.B) {
	f := newFixture(b)
	servers := benchList(b, f, *benchServers)
	if err := spool.WriteLedger(f.dir, benchLedger(servers)); err != nil {
		b.Fatal(err)
	}
	cfg := f.config()
	cfg.Workers, cfg.NoHTML = 16, true
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		os.RemoveAll(f.out)
		os.RemoveAll(filepath.Join(f.dir, "site"))
		b.StartTimer()
		if _, err := Publish(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
	}
	reportPeakRSS(b)
}

// BenchmarkBaselineIndexRewrite encodes and atomically rewrites an index
// of -bench.servers servers in one file, as index.json was before it had
// parts, and nothing else: the floor of any publish that keeps one index
// of every server current, measured in the same run as the publish
// benchmarks so that their figures can be given as ratios.
func BenchmarkBaselineIndexRewrite(b *testing.B) {
	f := newFixture(b)
	st := newStore()
	rows, ids := make([]row, *benchServers), make([]string, *benchServers)
	for i := range rows {
		ids[i] = fmt.Sprintf("srv%07d", i)
		rows[i] = row{Rank: i + 1, status: statusIndex(data.Working), LastCheck: fixNow.Add(-time.Hour).UnixMilli(), Uptime7d: 9950, Tools: 3}
	}
	st.setRows(rows, ids)
	st.sortOrder()
	w := newWriter(f.out)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.stage(filepath.Join(f.out, "index.json"), encodeWholeIndex(st)...); err != nil {
			b.Fatal(err)
		}
		if err := w.flush(); err != nil {
			b.Fatal(err)
		}
	}
}

// encodeWholeIndex returns an index of every row in rank order in one
// file, as index.json was before it had parts, in pieces encoded in
// parallel: the baseline's work.
func encodeWholeIndex(st *store) [][]byte {
	const chunk = 1 << 15
	parts := make([][]byte, (st.n()+chunk-1)/chunk)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for c := range parts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			lo, hi := c*chunk, min((c+1)*chunk, st.n())
			pb := make([]byte, 0, (hi-lo)*110)
			for i := lo; i < hi; i++ {
				if i > 0 {
					pb = append(pb, ',')
				}
				pb = append(pb, '\n')
				r := &st.all()[st.orderAt(i)]
				pb = appendIndexRow(pb, st.id(r), r)
			}
			parts[c] = pb
		})
	}
	wg.Wait()
	head := encodeIndex(st)
	return slices.Concat([][]byte{head[:len(head)-len("\"parts\":[\n]}\n")], []byte(`"rows":[`)}, parts, [][]byte{[]byte("\n]}\n")})
}
