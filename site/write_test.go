package site

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/internal/testutil"
)

// flushCounter counts the flushes and file fsyncs of the publishes of a
// config, and reads, at each flush, the files that point at the others.
type flushCounter struct {
	flushes, fsyncs atomic.Int64
	atFlush         map[string][]byte // out-relative or record path -> bytes at the flush; nil when absent
	out             string            // when set, the output's files at the flush are read into outAtFlush
	outAtFlush      map[string][]byte // out-relative path -> bytes at the flush
	fail            error             // returned by the flush when set
}

// install makes cfg's publishes count into c.
func (c *flushCounter) install(cfg *Config, watch ...string) {
	cfg.calls.Sync = func(fl *os.File) error { c.fsyncs.Add(1); return fl.Sync() }
	cfg.calls.syncFS = func(dirs ...string) error {
		c.flushes.Add(1)
		c.atFlush = map[string][]byte{}
		for _, p := range watch {
			if m, _ := filepath.Glob(p); len(m) == 1 {
				c.atFlush[p], _ = os.ReadFile(m[0]) // a pattern names a file in a directory written afresh, or a temporary file
			}
		}
		if c.out != "" {
			c.outAtFlush = readTree(c.out)
		}
		if c.fail != nil {
			return c.fail
		}
		return durable.SyncFS(dirs...)
	}
}

// readTree returns the files under root and their bytes, by path
// relative to root with slashes; a file that cannot be read is nil.
func readTree(root string) map[string][]byte {
	files := map[string][]byte{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			files[filepath.ToSlash(rel)], _ = os.ReadFile(path)
		}
		return nil
	})
	return files
}

// TestPublishFlushesOnce: a publish writes every file without an fsync
// each, flushes once, and only then puts the files it replaced in place,
// then index.json, status.json and the site's record (its delta): at the
// flush every file of the output still holds what the previous publish
// left, while the new bytes of a server with a new check are in a
// temporary file beside its file, so that a power cut before the flush
// made them durable cannot leave the file empty on any file system; a
// rebuild into an empty output holds them in the directories it writes
// afresh, not yet in place.
func TestPublishFlushesOnce(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	index, status, record := filepath.Join(f.out, "index.json"), filepath.Join(f.out, "status.json"), data.Dir(f.dir).SiteStore()
	server, delta := filepath.Join(f.out, "servers", srvWorking.ID+".json"), deltaPath(f.dir)
	afresh := filepath.Join(f.out, freshPrefix+"servers-*", srvWorking.ID+".json")
	temp := filepath.Join(f.out, "servers", "."+srvWorking.ID+".json.tmp-*")
	c := flushCounter{out: f.out}
	cfg := f.config()
	c.install(&cfg, index, status, record, delta, server, afresh, temp)
	for _, tc := range []struct {
		name    string
		before  func()
		written bool // the server's file changes
	}{
		{"P3_rebuild", func() {}, true},
		{"P3_new_check", func() {
			f.now = f.now.Add(time.Minute)
			f.results(result(srvWorking, f.now.Add(-30*time.Second), data.Failing, "HTTP 502"))
		}, true},
		{"P3_nothing_new", func() {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.before()
			prev := map[string][]byte{}
			for _, p := range []string{index, status, record, delta, server} {
				prev[p], _ = os.ReadFile(p)
			}
			prevOut := readTree(f.out)
			c.flushes.Store(0)
			c.fsyncs.Store(0)
			if _, err := Publish(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if n := c.flushes.Load(); n != 1 {
				t.Errorf("%d flushes, want 1", n)
			}
			if n := c.fsyncs.Load(); durable.CanSyncFS && n != 0 {
				t.Errorf("%d files fsynced by the writer, want none", n)
			}
			for _, p := range []string{index, status, record, delta} {
				if !bytes.Equal(c.atFlush[p], prev[p]) {
					t.Errorf("%s was moved before the flush", p)
				}
			}
			if now, _ := os.ReadFile(delta); tc.name == "P3_new_check" && bytes.Equal(now, prev[delta]) {
				t.Error("the record's delta was not written")
			}
			now, _ := os.ReadFile(server)
			if tc.written == bytes.Equal(now, prev[server]) {
				t.Errorf("server file changed: %v, want %v", !bytes.Equal(now, prev[server]), tc.written)
			}
			if tc.name == "P3_rebuild" {
				if c.atFlush[server] != nil {
					t.Error("the server's file was in place before the flush")
				}
				if !bytes.Equal(c.atFlush[afresh], now) {
					t.Errorf("the server's file was not written to %s before the flush", afresh)
				}
				return
			}
			for rel, b := range c.outAtFlush {
				was, ok := prevOut[rel]
				switch {
				case durable.IsTempName(filepath.Base(rel)):
				case !ok && strings.HasPrefix(rel, indexDir+"/"): // a new part, which nothing names yet
				case !ok:
					t.Errorf("%s was put in place before the flush", rel)
				case !bytes.Equal(b, was):
					t.Errorf("%s was replaced before the flush", rel)
				}
			}
			if tc.written != bytes.Equal(c.atFlush[temp], now) {
				t.Errorf("the server's new bytes in a temporary file beside it at the flush: %v, want %v", !tc.written, tc.written)
			}
			if m, _ := filepath.Glob(filepath.Join(f.out, freshPrefix+"*")); len(m) > 0 {
				t.Errorf("left after the publish: %v", m)
			}
		})
	}
}

// TestPublishReplacesInBatches: a publish that replaces more files than
// it holds in temporary files (Config.replacedHeld; 8,192 by default, so
// that a rebuild over an output that exists does not take the disk twice
// over) flushes and renames them a batch at a time as it renders, and
// moves index.json, status.json and the site's record only after the last
// flush: it makes the site a publish in one batch makes, with no
// temporary file left. A batch whose flush fails fails the publish as
// the last flush does: the files that point at the others stay as they
// were, no temporary file is left, and the next publish makes the site of
// one that never failed (rule P3).
func TestPublishReplacesInBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		failAt int64 // the flush that fails; 0: none
	}{
		{"P3_batches", 0},
		{"P3_second_flush_fails", 2},
		{"P3_fourth_flush_fails", 4},
		{"P3_seventh_flush_fails", 7},
		{"P3_tenth_flush_fails", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, ctl := newStandard(t), newStandard(t)
			for _, g := range []*fixture{f, ctl} {
				g.MustPublish()
				g.now = g.now.Add(time.Minute)
				var rs []data.Result
				for _, s := range []data.Server{srvWorking, srvKey, srvRefused, srvFailing, srvNew} {
					rs = append(rs, result(s, g.now.Add(-30*time.Second), data.Failing, "HTTP 502"))
				}
				g.results(rs...)
			}
			pointers := []string{filepath.Join(f.out, "index.json"), filepath.Join(f.out, "status.json"), data.Dir(f.dir).SiteStore(), deltaPath(f.dir)}
			prev := map[string][]byte{}
			for _, p := range pointers {
				prev[p], _ = os.ReadFile(p)
			}
			failed := errors.New("disk gone")
			var flushes atomic.Int64
			cfg := f.config()
			cfg.replacedHeld = 3
			cfg.calls.syncFS = func(dirs ...string) error {
				n := flushes.Add(1)
				for _, p := range pointers {
					if now, _ := os.ReadFile(p); !bytes.Equal(now, prev[p]) {
						t.Errorf("%s moved before flush %d", p, n)
					}
				}
				if n == tc.failAt {
					return failed
				}
				return durable.SyncFS(dirs...)
			}
			st, err := Publish(context.Background(), cfg)
			if tc.failAt != 0 {
				if !errors.Is(err, failed) {
					t.Fatalf("publish with flush %d failing: %v, want %v", tc.failAt, err, failed)
				}
				for _, p := range pointers {
					if now, _ := os.ReadFile(p); !bytes.Equal(now, prev[p]) {
						t.Errorf("%s moved although a flush failed", p)
					}
				}
			} else if err != nil {
				t.Fatal(err)
			}
			switch n := flushes.Load(); {
			case tc.failAt != 0:
				if n != tc.failAt {
					t.Errorf("%d flushes, want none after the one that failed, %d", n, tc.failAt)
				}
			case n < 3:
				t.Errorf("%d flushes of %d files written, 3 held at most: want a batch at a time", n, st.Written)
			}
			for rel := range readTree(f.out) {
				if durable.IsTempName(filepath.Base(rel)) {
					t.Errorf("temporary file left: %s", rel)
				}
			}
			if tc.failAt != 0 {
				f.MustPublish()
			}
			ctl.MustPublish()
			if got, want := testutil.MustTree(t, f.out), testutil.MustTree(t, ctl.out); !reflect.DeepEqual(got, want) {
				t.Error("the publish in batches made another site than one in one batch")
			}
		})
	}
}

// checkedPair returns two copies of the standard site, published, each
// with a new check of srvWorking a minute later not published yet: f to
// fail a publish of, clean to publish as if nothing failed.
func checkedPair(t *testing.T) (f, clean *fixture) {
	t.Helper()
	f, clean = newStandard(t), newStandard(t)
	for _, g := range []*fixture{f, clean} {
		g.MustPublish()
		g.now = g.now.Add(time.Minute)
		g.results(result(srvWorking, g.now.Add(-30*time.Second), data.Failing, "HTTP 502"))
	}
	return f, clean
}

// TestPublishFailedFlush: a publish whose flush fails (as a crash between
// the server files and the flush would) moves neither index.json, nor
// status.json, nor the site's record, and leaves no temporary file; the
// next publish makes the same site as one that never failed (rule P3).
func TestPublishFailedFlush(t *testing.T) {
	t.Parallel()
	f, clean := checkedPair(t)
	index, status, record := filepath.Join(f.out, "index.json"), filepath.Join(f.out, "status.json"), data.Dir(f.dir).SiteStore()
	prev := map[string][]byte{}
	for _, p := range []string{index, status, record, deltaPath(f.dir)} {
		prev[p], _ = os.ReadFile(p)
	}
	c := flushCounter{fail: errors.New("disk gone")}
	cfg := f.config()
	c.install(&cfg)
	if _, err := Publish(context.Background(), cfg); err == nil || !errors.Is(err, c.fail) {
		t.Fatalf("publish with a failing flush: %v, want %v", err, c.fail)
	}
	for p, b := range prev {
		if now, _ := os.ReadFile(p); !bytes.Equal(now, b) {
			t.Errorf("%s moved although the flush failed", p)
		}
	}
	for _, dir := range []string{f.out, filepath.Dir(record)} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if durable.IsTempName(e.Name()) {
				t.Errorf("temporary file left: %s", filepath.Join(dir, e.Name()))
			}
		}
	}
	f.MustPublish()
	clean.MustPublish()
	if got, want := testutil.MustTree(t, f.out), testutil.MustTree(t, clean.out); !reflect.DeepEqual(got, want) {
		t.Error("the publish after a failed flush made another site than one that never failed")
	}
}

// TestPublishFailedBeforeFlush: a publish that fails before its flush (a
// full disk as it writes the index, after the servers' files) leaves no
// temporary file in the output or the data directory, where a site build
// would ship them until the next publish, and moves nothing: the next
// publish makes the same site as one that never failed (rule P3).
func TestPublishFailedBeforeFlush(t *testing.T) {
	t.Parallel()
	f, clean := checkedPair(t)
	prevOut := readTree(f.out)
	full := errors.New("no space left on device")
	cfg := f.config()
	cfg.calls.Write = func(fl *os.File, b []byte) (int, error) {
		if filepath.Base(filepath.Dir(fl.Name())) == indexDir {
			return 0, full
		}
		return fl.Write(b)
	}
	var flushes atomic.Int64
	cfg.calls.syncFS = func(dirs ...string) error { flushes.Add(1); return durable.SyncFS(dirs...) }
	if _, err := Publish(context.Background(), cfg); !errors.Is(err, full) {
		t.Fatalf("publish with the index's parts failing: %v, want %v", err, full)
	}
	if n := flushes.Load(); n != 0 {
		t.Fatalf("%d flushes: the publish did not fail before its flush, the case this test is for", n)
	}
	for _, dir := range []string{f.out, f.dir} {
		for rel := range readTree(dir) {
			if durable.IsTempName(filepath.Base(rel)) {
				t.Errorf("temporary file left: %s", filepath.Join(dir, rel))
			}
		}
	}
	if now := readTree(f.out); !reflect.DeepEqual(now, prevOut) {
		t.Error("the output changed though the publish failed before its flush")
	}
	f.MustPublish()
	clean.MustPublish()
	if got, want := testutil.MustTree(t, f.out), testutil.MustTree(t, clean.out); !reflect.DeepEqual(got, want) {
		t.Error("the publish after one that failed before its flush made another site than one that never failed")
	}
}

// TestPublishReadsNothingBack: a publish decides whether to write a file by
// what the site's record keeps of it (a hash, or the server's file read as
// its record), not by reading every old file back: once the
// site is built, a publish with a new check and one with nothing new read
// back no file but the one shared file whose turn it is (sharedFiles: one
// damaged is written again), and write the files of the server checked,
// all and only those whose bytes change.
func TestPublishReadsNothingBack(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	var reads atomic.Int64
	cfg := f.config()
	cfg.calls.read = func(path string) ([]byte, error) { reads.Add(1); return os.ReadFile(path) }
	for _, tc := range []struct {
		name      string
		before    func()
		readBacks func(n int64) bool
		written   func(n int) bool
	}{
		// A rebuild knows no hash: it reads back what a site left.
		{"rebuild_reads_back", func() {}, func(n int64) bool { return n > 0 }, func(n int) bool { return n > 0 }},
		// At most the one shared file whose turn it is (sharedFiles).
		{"P3_new_check", func() {
			f.now = f.now.Add(time.Minute)
			f.results(result(srvWorking, f.now.Add(-30*time.Second), data.Failing, "HTTP 502"))
		}, func(n int64) bool { return n <= 1 }, func(n int) bool { return n > 0 }},
		{"P3_nothing_new", func() {}, func(n int64) bool { return n <= 1 }, func(n int) bool { return n == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.before()
			before := map[string][]byte{}
			if _, err := os.Stat(f.out); err == nil {
				before = testutil.MustTree(t, f.out)
			}
			reads.Store(0)
			st, err := Publish(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n := reads.Load(); !tc.readBacks(n) {
				t.Errorf("%d files read back", n)
			}
			if !tc.written(st.Written) {
				t.Errorf("%d files written", st.Written)
			}
			after := testutil.MustTree(t, f.out)
			changed := 0
			for rel, b := range after {
				if !bytes.Equal(before[rel], b) {
					changed++
				}
			}
			// Written counts the site's own records too (the feed's, the
			// older checks, state.bin): at least every public file changed.
			if changed > st.Written {
				t.Errorf("%d public files changed, %d written", changed, st.Written)
			}
		})
	}
	// The same site as a publish that reads every file back: one whose
	// record knows no hash.
	clean := f.clone(t)
	st := mustLoadStore(t, clean.dir)
	for i := range st.all() {
		st.all()[i].HTMLSum, st.all()[i].StripSum = 0, 0
	}
	st.Meta.Sums = map[string]uint64{}
	if err := durable.WriteFileAtomic(data.Dir(clean.dir).SiteStore(), mustStoreFile(t, st), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*fixture{f, clean} {
		g.now = g.now.Add(time.Hour)
		g.results(result(srvKey, g.now.Add(-time.Minute), data.Working, ""))
		g.MustPublish()
	}
	got, want := testutil.MustTree(t, f.out), testutil.MustTree(t, clean.out)
	for rel := range want {
		if !bytes.Equal(got[rel], want[rel]) {
			t.Errorf("%s: a publish by hashes wrote other bytes than one reading every file back", rel)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d files published by hashes, %d reading every file back", len(got), len(want))
	}
}

// TestStoreV3 proves a site record of the layout before the hashes of
// each server's files still loads, with the hashes unknown: its
// files are read back the next time they are rendered.
func TestStoreV3(t *testing.T) {
	t.Parallel()
	text, sum, err := durable.ReadSummed(filepath.Join("testdata", "state-v3.bin")) // written by 4f35368's encode
	if err != nil {
		t.Fatal(err)
	}
	s, err := decodeStore(text, sum)
	if err != nil {
		t.Fatalf("a v3 site record: %v", err)
	}
	if len(s.all()) != 2 || s.id(&s.all()[0]) != "alpha" || s.all()[0].Protocol() != "2025-11-25" || !s.all()[0].Speaks || s.all()[0].Problems != 1 ||
		!s.all()[1].Paused || s.all()[1].Problems != 0 || s.factsPending {
		t.Fatalf("v3 rows read as %+v", s.all())
	}
	for i, r := range s.all() {
		if r.HTMLSum != 0 || r.StripSum != 0 {
			t.Errorf("%s: hashes %x %x; want unknown (0)", s.id(&s.all()[i]), r.HTMLSum, r.StripSum)
		}
	}
}
