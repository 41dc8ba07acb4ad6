package lists

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
)

// TestPauseRecord: changes come back by server, in the order appended; a
// line with a flipped byte is skipped and named, never read altered (a
// moved digit would move a pause); a missing record holds none.
func TestPauseRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got, bad, err := ReadPauseRecord(dir); err != nil || len(bad) > 0 || len(got) != 0 {
		t.Fatalf("missing record: %v %v %v", got, bad, err)
	}
	a := []PauseChange{{ID: "alpha", Paused: true, At: datatest.T0}, {ID: "bravo", Paused: true, At: datatest.T0.Add(time.Minute)}}
	b := []PauseChange{{ID: "alpha", Paused: false, At: datatest.T0.Add(time.Hour)}}
	if err := AppendPauseRecord(dir, a); err != nil {
		t.Fatal(err)
	}
	if err := AppendPauseRecord(dir, b); err != nil {
		t.Fatal(err)
	}
	got, bad, err := ReadPauseRecord(dir)
	want := map[string][]PauseChange{"alpha": {a[0], b[0]}, "bravo": {a[1]}}
	if err != nil || len(bad) > 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("record %+v %v %v\nwant %+v", got, bad, err, want)
	}
	// A digit of bravo's time flipped.
	body, _ := os.ReadFile(data.Dir(dir).PauseRecord())
	i := strings.Index(string(body), "10:01:00")
	body[i+4] = '2'
	os.WriteFile(data.Dir(dir).PauseRecord(), body, 0o644)
	got, bad, err = ReadPauseRecord(dir)
	if err != nil || len(bad) != 1 || !strings.Contains(bad[0].Error(), "pauses.jsonl:2") || len(got["bravo"]) != 0 || len(got["alpha"]) != 2 {
		t.Errorf("after a flip: %+v %v %v; want line 2 named and skipped", got, bad, err)
	}
}
