package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// stepClock is a clock set by hand.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }

// clockAdapter makes a stepClock a Clock; its Sleep returns at once.
type clockAdapter struct{ c *stepClock }

func (a clockAdapter) Now() time.Time { return a.c.now }

func (a clockAdapter) Sleep(context.Context, time.Duration) error { return nil }

func TestHostStartLog(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	type try struct {
		proc int // which of the two processes asks
		host string
		at   time.Duration
		ok   bool
		next time.Duration // when not ok
	}
	cases := map[string][]try{
		"S9_spacing_across_processes": {
			{0, "a", 0, true, 0},
			{1, "a", 500 * time.Millisecond, false, time.Second},
			{1, "b", 500 * time.Millisecond, true, 0},
			{0, "b", 1400 * time.Millisecond, false, 1500 * time.Millisecond},
			{1, "a", time.Second, true, 0},
			{0, "a", 1999 * time.Millisecond, false, 2 * time.Second},
			{0, "a", 2 * time.Second, true, 0},
		},
		"S9_spacing_survives_compaction": {
			{0, "a", 0, true, 0},
			{1, "a", 100 * time.Millisecond, false, time.Second}, // the compaction happens around here
			{1, "a", 2 * time.Second, true, 0},
			{0, "a", 2500 * time.Millisecond, false, 3 * time.Second},
		},
	}
	for name, tries := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			clock := &stepClock{}
			var ls [2]*startLog
			for i := range ls {
				l, err := openStartLog(dir, clockAdapter{clock})
				if err != nil {
					t.Fatal(err)
				}
				defer l.close()
				ls[i] = l
			}
			if name == "S9_spacing_survives_compaction" {
				// Fill the log with other hosts so the next starts compact it.
				for i := range 200 {
					clock.now = t0.Add(-2 * time.Minute)
					ls[0].tryStart(fmt.Sprintf("old%d", i))
				}
				ls[0].compactAt, ls[1].compactAt = 512, 512
			}
			for i, tr := range tries {
				clock.now = t0.Add(tr.at)
				ok, at, err := ls[tr.proc].tryStart(tr.host)
				if err != nil {
					t.Fatal(err)
				}
				if ok != tr.ok || (ok && !at.Equal(clock.now)) || (!ok && !at.Equal(t0.Add(tr.next))) {
					t.Errorf("try %d (%s at %v): ok %v at %v, want ok %v next %v", i, tr.host, tr.at, ok, at.Sub(t0), tr.ok, tr.next)
				}
			}
			if fi, err := os.Stat(filepath.Join(dir, "run", "hosts.log")); err != nil || fi.Size() > 4096 {
				t.Errorf("log after the run: %v, %v; want it compacted small", fi.Size(), err)
			}
		})
	}
	t.Run("torn_line_from_a_killed_writer", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		clock := &stepClock{now: t0}
		l, err := openStartLog(dir, clockAdapter{clock})
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		if ok, _, _ := l.tryStart("a"); !ok {
			t.Fatal("first start refused")
		}
		f, _ := os.OpenFile(filepath.Join(dir, "run", "hosts.log"), os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString("b 17") // a writer killed mid-line
		f.Close()
		l2, _ := openStartLog(dir, clockAdapter{clock})
		defer l2.close()
		clock.now = t0.Add(100 * time.Millisecond)
		if ok, _, _ := l2.tryStart("a"); ok {
			t.Error("S9: a second process started host a 100 ms after the first")
		}
		if ok, _, _ := l2.tryStart("c"); !ok {
			t.Error("host c refused")
		}
		if ok, _, _ := l.tryStart("c"); ok {
			t.Error("S9: host c started twice in 100 ms: the line after the torn one was lost")
		}
	})
}
