package testutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordTB is a testing.TB that records failures instead of failing, so a
// test can assert that a helper fails. Fatal ends the calling goroutine, as
// it does for a real test.
type recordTB struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recordTB) Helper() {}

func (r *recordTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func (r *recordTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with r in a goroutine of its own, so that Fatalf can end it.
func (r *recordTB) run(f func(tb testing.TB)) []string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failed
}

func TestGolden(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "testdata", "sub", "a.golden")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("same", func(t *testing.T) {
		r := &recordTB{TB: t}
		if failed := r.run(func(tb testing.TB) { Golden(tb, path, []byte("one\ntwo\nthree\n")) }); len(failed) != 0 {
			t.Errorf("equal output failed: %q", failed)
		}
	})
	t.Run("differs_names_the_line", func(t *testing.T) {
		r := &recordTB{TB: t}
		failed := r.run(func(tb testing.TB) { Golden(tb, path, []byte("one\nTWO\nthree\n")) })
		if len(failed) != 1 || !strings.Contains(failed[0], "at line 2") || !strings.Contains(failed[0], "got: TWO") {
			t.Errorf("failures %q, want one naming line 2", failed)
		}
	})
	t.Run("missing_file", func(t *testing.T) {
		r := &recordTB{TB: t}
		failed := r.run(func(tb testing.TB) { Golden(tb, filepath.Join(dir, "testdata", "none"), []byte("x")) })
		if len(failed) != 1 || !strings.Contains(failed[0], "-update") {
			t.Errorf("failures %q, want one telling of -update", failed)
		}
	})
	t.Run("update_writes", func(t *testing.T) {
		*update = true
		defer func() { *update = false }()
		fresh := filepath.Join(dir, "testdata", "new", "b.golden")
		Golden(t, fresh, []byte("written"))
		if b, err := os.ReadFile(fresh); err != nil || string(b) != "written" {
			t.Errorf("after -update the file holds %q (%v)", b, err)
		}
	})
}

// TestListenLoopback8443: every listener is on its own 127.a.b.c:8443.
func TestListenLoopback8443(t *testing.T) {
	seen := map[netip.AddrPort]bool{}
	for range 20 {
		ap := netip.MustParseAddrPort(ListenLoopback8443(t).Addr().String())
		if !ap.Addr().Is4() || !ap.Addr().IsLoopback() || ap.Port() != 8443 || seen[ap] {
			t.Errorf("listening on %s: want a fresh 127.a.b.c:8443", ap)
		}
		seen[ap] = true
	}
}

// TestMustCA: a leaf verifies against the CA's file for its name and
// validity only, and another CA's leaf does not.
func TestMustCA(t *testing.T) {
	ca := MustCA(t)
	pemBytes, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatal("CA file holds no certificate")
	}
	now := time.Now()
	verify := func(c tls.Certificate, name string, at time.Time) error {
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: at})
		return err
	}
	good := ca.MustLeaf(t, now.Add(-time.Hour), now.Add(time.Hour), "mcp.test", "b.test")
	if err := verify(good, "b.test", now); err != nil {
		t.Errorf("valid leaf: %v", err)
	}
	if err := verify(good, "other.test", now); err == nil {
		t.Error("leaf verified for a name it does not hold")
	}
	if err := verify(good, "mcp.test", now.Add(2*time.Hour)); err == nil {
		t.Error("leaf verified after it expired")
	}
	if err := verify(MustCA(t).MustLeaf(t, now.Add(-time.Hour), now.Add(time.Hour), "mcp.test"), "mcp.test", now); err == nil {
		t.Error("another CA's leaf verified")
	}
}

// TestSamplePeak: a 64 MiB allocation held for 50 ms shows in the peak.
func TestSamplePeak(t *testing.T) {
	stop := make(chan struct{})
	peak := SamplePeak("/memory/classes/heap/objects:bytes", stop)
	big := make([]byte, 64<<20)
	big[len(big)-1] = 1
	time.Sleep(50 * time.Millisecond) // the sampler reads every 5 ms
	runtime.KeepAlive(big)
	close(stop)
	if p := peak.Load(); p < 64<<20 {
		t.Errorf("peak %d bytes, want at least the 64 MiB held", p)
	}
}

// TestHeapPeak: a 64 MiB allocation live through a collection shows in
// the peak after it is freed and collected again.
func TestHeapPeak(t *testing.T) {
	runtime.GC()
	stop := HeapPeak()
	big := make([]byte, 64<<20)
	big[len(big)-1] = 1
	runtime.GC() // big is live: its cleanup notes it
	runtime.KeepAlive(big)
	big = nil
	// The cleanup of the collection that saw big runs on a goroutine of
	// its own, some time after; each collection after frees big again.
	for range 100 {
		runtime.GC()
	}
	peak, n := stop()
	if peak < 64<<20 {
		t.Errorf("peak %d bytes after %d collections, want at least the 64 MiB held through one", peak, n)
	}
	if n == 0 {
		t.Errorf("no collection noted of the %d made", 101)
	}
}

// TestImportOwnership holds the module to the house rules of the style
// guide (STYLE.md, "The house"): one package owns each outside dependency
// (parquet-go: data/history; go-github: the pause-request code; the MCP SDK:
// runner/check, with the test fleet runner/fleet, and test servers in any
// test), internal/testutil and the stores' fixtures (data/datatest,
// data/spool/spooltest) only in tests (so no fixture reaches a production
// binary), nothing outside cmd/ imports cmd/, the domain package data imports
// none of its stores, internal/durable none of data, and data imports none
// of the packages built on it. The site's packages point one way, the
// publish pass (site) over the outputs (site/strip, site/feed, site/badge,
// site/checks, site/pages) over what a server's record is (site/record):
// nothing under site/ imports site; only site and cmd/ import an output,
// save an output that embeds another (a page its strips and the checks
// page's text, a badge's links the strip's size), and a test that reads
// one's bounds; the record imports none of them; and every package under
// site/ is one of these.
func TestImportOwnership(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module: full mode only, make test runs it")
	}
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "plug.directory/prober/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "plug.directory/prober/"
	under := func(pkg string, dirs ...string) bool {
		for _, d := range dirs {
			if pkg == mod+d || strings.HasPrefix(pkg, mod+d+"/") {
				return true
			}
		}
		return false
	}
	// The site's outputs, each with the outputs it embeds.
	outputs := map[string][]string{
		"site/strip": nil, "site/feed": nil, "site/checks": nil,
		"site/badge": {"site/strip"},
		"site/pages": {"site/strip", "site/checks"},
	}
	output := func(dep string) func(string) bool {
		return func(p string) bool {
			if p == mod+"site" || under(p, "cmd") {
				return true
			}
			for _, o := range outputs[strings.TrimPrefix(p, mod)] {
				if mod+o == dep {
					return true
				}
			}
			return false
		}
	}
	type rule struct {
		dep   string // import path, or its prefix ending in /
		owner func(pkg string) bool
		tests bool // the rule holds for test files too
		exact bool // dep alone, not the packages under it
	}
	rules := []rule{
		{"github.com/parquet-go/", func(p string) bool { return p == mod+"data/history" }, true, false},
		{"github.com/google/go-github/", func(p string) bool { return under(p, "pause") }, true, false},
		{"github.com/modelcontextprotocol/go-sdk/", func(p string) bool { return under(p, "runner/check", "runner/fleet") }, false, false},
		{mod + "internal/testutil", func(p string) bool { return p == mod+"internal/testutil" }, false, false},
		{mod + "data/datatest", func(p string) bool { return p == mod+"data/datatest" }, false, false},
		{mod + "data/spool/spooltest", func(p string) bool { return p == mod+"data/spool/spooltest" }, false, false},
		{mod + "data/", func(p string) bool { return p != mod+"data" }, true, false},
		{mod + "data", func(p string) bool { return !under(p, "internal/durable") }, true, false},
		{mod + "cmd/", func(p string) bool { return under(p, "cmd") }, true, false},
		{mod + "planner", func(p string) bool { return !under(p, "data") }, true, false},
		{mod + "runner", func(p string) bool { return !under(p, "data") }, true, false},
		{mod + "site", func(p string) bool { return !under(p, "data") }, true, false},
		{mod + "site", func(p string) bool { return !strings.HasPrefix(p, mod+"site/") }, true, true},
	}
	for o := range outputs {
		rules = append(rules, rule{mod + o, output(mod + o), false, false})
	}
	matches := func(r rule, imp string) bool {
		dep := r.dep
		if r.exact {
			return imp == dep
		}
		if strings.HasSuffix(dep, "/") {
			return strings.HasPrefix(imp, dep)
		}
		return imp == dep || strings.HasPrefix(imp, dep+"/")
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 3 {
			t.Fatalf("go list line %q", line)
		}
		pkg := f[0]
		if o := strings.TrimPrefix(pkg, mod); strings.HasPrefix(o, "site/") && o != "site/record" {
			if _, known := outputs[o]; !known {
				t.Errorf("%s: a package under site/ that is neither the record nor a known output", pkg)
			}
		}
		for _, r := range rules {
			for _, imp := range strings.Fields(f[1]) {
				if matches(r, imp) {
					seen[r.dep] = true
					if !r.owner(pkg) {
						t.Errorf("%s imports %s: not its owner", pkg, imp)
					}
				}
			}
			for _, imp := range strings.Fields(f[2]) {
				if matches(r, imp) && imp != pkg && r.tests && !r.owner(pkg) {
					t.Errorf("the tests of %s import %s: not its owner", pkg, imp)
				}
			}
		}
	}
	// A rule that matches nothing is a rule that went stale (a module path
	// that moved): the outside dependencies and the site's outputs must
	// each be found.
	stale := []string{"github.com/parquet-go/", "github.com/google/go-github/", "github.com/modelcontextprotocol/go-sdk/"}
	for o := range outputs {
		stale = append(stale, mod+o)
	}
	for _, dep := range stale {
		if !seen[dep] {
			t.Errorf("no package imports %s: the rule is stale", dep)
		}
	}
}

// TestShortInMemory: a TMPDIR that is set stays; otherwise -short moves
// the temporary directory to the RAM disk when it did so, and a full run
// never moves it.
func TestShortInMemory(t *testing.T) {
	t.Setenv("TMPDIR", "/var/tmp")
	if ShortInMemory() || os.TempDir() != "/var/tmp" {
		t.Errorf("TMPDIR /var/tmp moved to %s", os.TempDir())
	}
	os.Unsetenv("TMPDIR") // t.Setenv puts it back
	moved := ShortInMemory()
	if moved && (!testing.Short() || os.TempDir() != ramDisk) {
		t.Errorf("moved to %s (short %v), want %s and only under -short", os.TempDir(), testing.Short(), ramDisk)
	}
	if !moved && os.TempDir() != "/tmp" {
		t.Errorf("not moved, yet the temporary directory is %s", os.TempDir())
	}
}

// TestJumpClock: Set jumps the clock either way and Sleep moves it on by
// what it is asked at once, failing only with a context that is done.
func TestJumpClock(t *testing.T) {
	t0 := time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)
	c := NewJumpClock(t0)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	steps := []struct {
		name string
		do   func() error
		want time.Time
		err  error
	}{
		{"sleep a minute", func() error { return c.Sleep(context.Background(), time.Minute) }, t0.Add(time.Minute), nil},
		{"jump a month", func() error { c.Set(t0.AddDate(0, 1, 0)); return nil }, t0.AddDate(0, 1, 0), nil},
		{"jump back", func() error { c.Set(t0); return nil }, t0, nil},
		{"sleep with a context done", func() error { return c.Sleep(done, time.Hour) }, t0.Add(time.Hour), context.Canceled},
	}
	for _, s := range steps {
		if err := s.do(); !errors.Is(err, s.err) {
			t.Errorf("%s: err %v, want %v", s.name, err, s.err)
		}
		if got := c.Now(); !got.Equal(s.want) {
			t.Errorf("%s: now %s, want %s", s.name, got, s.want)
		}
	}
}
