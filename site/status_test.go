package site

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestStatusFile: status.json says when the site was published, the
// latest minute a run claimed (its marker) and the latest minute whose run
// recorded its checks, each null before any run, and validates against its
// schema either way. A minute claimed by a run that died at its first
// check (a full disk) is not a minute recorded (issue 18 point 3).
func TestStatusFile(t *testing.T) {
	f := newFixture(t)
	f.standard()
	sch := mustSchema(t, "status.schema.json")
	read := func() (Status, []byte) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(f.out, "status.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.validate(b); err != nil {
			t.Errorf("status.json %s does not validate: %v", b, err)
		}
		var s Status
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
		p := data.MinuteMarkerPath(f.dir, m.Truncate(time.Minute))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recorded := fixNow.Add(-3 * time.Minute).Truncate(time.Minute)
	if err := data.MarkMinuteRecorded(f.dir, recorded); err != nil {
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
