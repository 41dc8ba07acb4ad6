package site

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
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
	fail            error             // returned by the flush when set
}

// install makes cfg's publishes count into c.
func (c *flushCounter) install(f *fixture, cfg *Config, watch ...string) {
	cfg.files.Sync = func(fl *os.File) error { c.fsyncs.Add(1); return fl.Sync() }
	cfg.syncFS = func(dirs ...string) error {
		c.flushes.Add(1)
		c.atFlush = map[string][]byte{}
		for _, p := range watch {
			c.atFlush[p], _ = os.ReadFile(p)
		}
		if c.fail != nil {
			return c.fail
		}
		return durable.SyncFS(dirs...)
	}
}

// TestPublishFlushesOnce: a publish writes every file without an fsync
// each, flushes once, and only then moves index.json, status.json and the
// site's record into place (issue 35): at the flush they still hold what
// the previous publish left, while the files of a server with a new check
// already hold their new bytes.
func TestPublishFlushesOnce(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	index, status, record := filepath.Join(f.out, "index.json"), filepath.Join(f.out, "status.json"), data.Dir(f.dir).SiteStore()
	server := filepath.Join(f.out, "servers", srvWorking.ID+".json")
	var c flushCounter
	cfg := f.config()
	c.install(f, &cfg, index, status, record, server)
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
			for _, p := range []string{index, status, record, server} {
				prev[p], _ = os.ReadFile(p)
			}
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
			for _, p := range []string{index, status, record} {
				if !bytes.Equal(c.atFlush[p], prev[p]) {
					t.Errorf("%s was moved before the flush", p)
				}
			}
			now, _ := os.ReadFile(server)
			if tc.written == bytes.Equal(now, prev[server]) {
				t.Errorf("server file changed: %v, want %v", !bytes.Equal(now, prev[server]), tc.written)
			}
			if tc.written && !bytes.Equal(c.atFlush[server], now) {
				t.Error("the server's file was not written before the flush")
			}
		})
	}
}

// TestPublishFailedFlush: a publish whose flush fails (as a crash between
// the server files and the flush would) moves neither index.json, nor
// status.json, nor the site's record, and leaves no temporary file; the
// next publish makes the same site as one that never failed (rule P3).
func TestPublishFailedFlush(t *testing.T) {
	t.Parallel()
	f, clean := newStandard(t), newStandard(t)
	for _, g := range []*fixture{f, clean} {
		g.MustPublish()
		g.now = g.now.Add(time.Minute)
		g.results(result(srvWorking, g.now.Add(-30*time.Second), data.Failing, "HTTP 502"))
	}
	index, status, record := filepath.Join(f.out, "index.json"), filepath.Join(f.out, "status.json"), data.Dir(f.dir).SiteStore()
	prev := map[string][]byte{}
	for _, p := range []string{index, status, record} {
		prev[p], _ = os.ReadFile(p)
	}
	c := flushCounter{fail: errors.New("disk gone")}
	cfg := f.config()
	c.install(f, &cfg)
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
