package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool/spooltest"
)

// testNow is the time the tests fold, scrub and load states at: when a
// damaged file is set aside, its name and age are of this clock.
var testNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// TestRunDamagedState: a flipped byte in a state delta does not stop the
// plan: the state is set aside, named on stderr, rebuilt from the history
// and the minute planned; -rebuild-state does the same on demand.
func TestRunDamagedState(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "servers.csv")
	MustRun(t, "-generate", "50", "-out", list, "-base", "2100-06-01T00:00:00Z")
	servers, _, err := lists.ReadServers(list)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2100, 6, 1, 11, 0, 0, 0, time.UTC)
	for i, s := range servers[:3] {
		r := data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Status: data.Failing, Started: at.Add(time.Duration(i) * time.Second),
			RetryAfter: at.Add(2 * time.Hour)}
		spooltest.MustJournal(t, dir, "test-"+r.ID, r).Close()
		if _, err := history.Fold(dir, testNow, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
	}
	want, _, err := history.LoadStates(dir, testNow)
	if err != nil {
		t.Fatal(err)
	}
	delta := filepath.Join(dir, "state", "delta-000000002.bin")
	b, err := os.ReadFile(delta)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	os.WriteFile(delta, b, 0o644)

	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"-servers", list, "-data", dir, "-at", "2100-06-01T12:00:00Z"}, &out, &errs); err != nil {
		t.Fatalf("plan with a damaged delta: %v\n%s", err, errs.String())
	}
	if !strings.Contains(errs.String(), "delta-000000002.bin: state delta is damaged") || !strings.Contains(errs.String(), "set aside in") {
		t.Errorf("stderr %q; want the delta named and where it went", errs.String())
	}
	if got, bad, err := history.LoadStates(dir, testNow); err != nil || len(bad) > 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("states after the plan: %v %v, differ: %v", bad, err, !reflect.DeepEqual(got, want))
	}
	if s := MustRun(t, "-rebuild-state", "-data", dir); !strings.Contains(s, "state rebuilt from the history: 3 states from 3 results in 3 files") {
		t.Errorf("-rebuild-state printed %q", s)
	}
	if got, _, _ := history.LoadStates(dir, testNow); !reflect.DeepEqual(got, want) {
		t.Errorf("states after -rebuild-state differ")
	}
}
