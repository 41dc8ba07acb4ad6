package site

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"plug.directory/prober/site/record"
)

// TestUpgradeReadsEarlierFiles: the published file is a server's record
// (loadSummary), so a file an earlier build published must read as the
// same record, or an upgrade would start every server's record afresh and
// lose the days, status changes and pauses only its file kept.
// testdata/upgrade/19b1cb5 holds the golden files of the build before the
// daily series and the history were written in columns (an object a day
// and a check); each reads as the record the golden file of this build
// holds for the same fixture.
func TestUpgradeReadsEarlierFiles(t *testing.T) {
	olds, err := filepath.Glob(filepath.Join("testdata", "upgrade", "19b1cb5", "*.json"))
	if err != nil || len(olds) == 0 {
		t.Fatalf("no earlier files: %v", err)
	}
	read := func(t *testing.T, path string) *record.Summary {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f record.ServerFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return record.SummaryOf(f)
	}
	for _, old := range olds {
		name := filepath.Base(old)
		t.Run(name, func(t *testing.T) {
			was, now := read(t, old), read(t, filepath.Join("testdata", "golden", "servers", name))
			if len(was.Days) == 0 && len(was.Checks) == 0 {
				t.Fatalf("%s read as an empty record", old)
			}
			for _, c := range []struct {
				what     string
				was, now any
			}{
				{"daily series", was.Days, now.Days},
				{"status changes", was.Spans, now.Spans},
				{"checks", was.Checks, now.Checks},
			} {
				if !reflect.DeepEqual(c.was, c.now) {
					t.Errorf("%s:\nearlier file %+v\nthis build's %+v", c.what, c.was, c.now)
				}
			}
		})
	}
}
