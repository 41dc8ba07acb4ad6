package site

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site/record"
)

// TestStatusFile: status.json says when the site was published, the
// latest minute a run claimed (its marker) and the latest minute whose run
// recorded its checks, each null before any run, and validates against its
// schema either way. A minute claimed by a run that died at its first
// check (a full disk) is not a minute recorded.
func TestStatusFile(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	sch := mustSchema(t, "status.schema.json")
	read := func() (record.Status, []byte) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(f.out, "status.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.validate(b); err != nil {
			t.Errorf("status.json %s does not validate: %v", b, err)
		}
		var s record.Status
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s, b
	}
	f.MustPublish()
	if s, b := read(); !s.Published.Equal(fixNow) || s.LastMinuteRun != nil || s.LastMinuteRecorded != nil || s.StaleAfterSeconds != 300 {
		t.Errorf("before any run: %s", b)
	}
	for _, m := range []time.Time{fixNow.Add(-3 * time.Minute), fixNow.Add(-time.Minute), fixNow.Add(-2 * time.Minute)} {
		p := data.Dir(f.dir).MinuteMarker(m.Truncate(time.Minute))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recorded := fixNow.Add(-3 * time.Minute).Truncate(time.Minute)
	if err := spool.MarkMinuteRecorded(f.dir, recorded); err != nil {
		t.Fatal(err)
	}
	f.now = fixNow.Add(20 * time.Second)
	f.MustPublish()
	want := fixNow.Add(-time.Minute).Truncate(time.Minute)
	if s, b := read(); !s.Published.Equal(f.now) || s.LastMinuteRun == nil || !s.LastMinuteRun.Equal(want) ||
		s.LastMinuteRecorded == nil || !s.LastMinuteRecorded.Equal(recorded) {
		t.Errorf("after runs: %s, want last_minute_run %s, last_minute_recorded %s", b, want.Format(time.RFC3339), recorded.Format(time.RFC3339))
	}
}

// TestIndexFreshness: the index opens with how many servers have each
// status, said once, then whether checks are running and how far they are
// recorded, and when it was published, from the same facts as status.json
// (stale after stale_after_seconds).
func TestIndexFreshness(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	index := func() string {
		t.Helper()
		f.MustPublish()
		b, err := os.ReadFile(filepath.Join(f.out, "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const overall = `<p class="overall"><strong>7 servers: 1 working, 1 need a key, 1 refuse our check, 1 not checkable by us, 1 failing, 1 paused at the owner&#39;s request, 1 not checked yet</strong>. `
	if p := index(); !strings.Contains(p, overall+"<strong>Checks have stopped</strong>: no minute recorded yet.") {
		t.Errorf("before any minute was recorded, the index does not say so:\n%s", p)
	}
	if err := spool.MarkMinuteRecorded(f.dir, fixNow.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	p := index()
	if !strings.Contains(p, overall+`Checks are running: checked up to <time datetime="2026-12-02T11:59:00.000Z">`) {
		t.Errorf("a minute recorded a minute ago: the index does not say checks run up to it:\n%s", p)
	}
	f.now = fixNow.Add(record.StatusStaleAfter + time.Minute)
	if p := index(); !strings.Contains(p, `<strong>Checks have stopped</strong>: no minute recorded since <time datetime="2026-12-02T11:59:00.000Z">`) {
		t.Errorf("six minutes without a recorded minute: the index does not warn:\n%s", p)
	}
}
