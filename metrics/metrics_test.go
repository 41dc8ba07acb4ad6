package metrics

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"plug.directory/prober/site"
)

// TestLatenessSummary: exact nearest-rank quantiles of rule S9's lateness;
// quantile 1 is the latest start.
func TestLatenessSummary(t *testing.T) {
	var ls []time.Duration
	for i := 100; i >= 1; i-- {
		ls = append(ls, time.Duration(i)*time.Millisecond)
	}
	m := latenessSummary("x", ls)
	var got = map[float64]float64{}
	pb := dtoOf(t, m)
	for _, q := range pb.GetSummary().GetQuantile() {
		got[q.GetQuantile()] = q.GetValue()
	}
	want := map[float64]float64{0.5: 0.05, 0.9: 0.09, 0.99: 0.099, 1: 0.1}
	for q, v := range want {
		if got[q] != v {
			t.Errorf("quantile %v = %v, want %v", q, got[q], v)
		}
	}
	if pb.GetSummary().GetSampleCount() != 100 {
		t.Errorf("count %d, want 100", pb.GetSummary().GetSampleCount())
	}
	if e := dtoOf(t, latenessSummary("x", nil)); e.GetSummary().GetSampleCount() != 0 {
		t.Errorf("no checks: count %d", e.GetSummary().GetSampleCount())
	}
}

// TestWritePublish: a publish that went well records its figures and its
// time; one that failed keeps the last success time, says success 0 and
// leaves no temporary file beside the file.
func TestWritePublish(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "publish.prom")
	t0 := time.Date(2026, 12, 2, 10, 33, 20, 0, time.UTC)
	st := site.Stats{Servers: 240, Written: 12, Results: 17}
	if err := WritePublish(path, PublishOf(st, nil, t0.Add(-2*time.Second), t0)); err != nil {
		t.Fatal(err)
	}
	fams, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"prober_publish_success": 1, "prober_publish_servers": 240, "prober_publish_files_written": 12,
		"prober_publish_results": 17, "prober_publish_duration_seconds": 2,
		"prober_publish_last_success_timestamp_seconds": float64(t0.Unix()),
		"prober_publish_last_timestamp_seconds":         float64(t0.Unix()),
	} {
		if got := fams[name].GetMetric()[0].GetGauge().GetValue(); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	t1 := t0.Add(time.Minute)
	if err := WritePublish(path, PublishOf(site.Stats{}, os.ErrPermission, t1, t1)); err != nil {
		t.Fatal(err)
	}
	if fams, err = ReadFile(path); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"prober_publish_success":                        0,
		"prober_publish_last_success_timestamp_seconds": float64(t0.Unix()),
		"prober_publish_last_timestamp_seconds":         float64(t1.Unix()),
	} {
		if got := fams[name].GetMetric()[0].GetGauge().GetValue(); got != want {
			t.Errorf("after a failure: %s = %v, want %v", name, got, want)
		}
	}
	if _, ok := fams["prober_publish_servers"]; ok {
		t.Error("a failed publish reports figures it does not have")
	}
	// The ranked list's bad rows count while they stay in it, read again
	// or not.
	if got := PublishOf(site.Stats{Bad: []error{os.ErrInvalid}, ListBadUnread: 2}, nil, t1, t1).Bad; got != 3 {
		t.Errorf("bad inputs %d, want 3: one named now, two rows still in the list", got)
	}
	// A server whose files could not be written is counted and named, by
	// id, the first MaxUnpublishedNamed of them.
	var un []site.Unpublished
	for _, id := range []string{"s12", "s03", "s01", "s02", "s04", "s05", "s06", "s07", "s08", "s09", "s10", "s11"} {
		un = append(un, site.Unpublished{ID: id, Err: os.ErrPermission})
	}
	if err := WritePublish(path, PublishOf(site.Stats{Servers: 20, Unpublished: un}, nil, t1, t1)); err != nil {
		t.Fatal(err)
	}
	if fams, err = ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if got := fams["prober_publish_servers_unpublished"].GetMetric()[0].GetGauge().GetValue(); got != 12 {
		t.Errorf("servers unpublished %v, want 12", got)
	}
	var named []string
	for _, m := range fams["prober_publish_server_unpublished"].GetMetric() {
		named = append(named, m.GetLabel()[0].GetValue())
	}
	if want := []string{"s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08", "s09", "s10"}; !slices.Equal(named, want) {
		t.Errorf("named %v, want the first %d by id %v", named, MaxUnpublishedNamed, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files beside the metrics, want only it: %v", len(entries), entries)
	}

	// A damaged file is replaced, and no success time is invented.
	if err := os.WriteFile(path, []byte("not { metrics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePublish(path, PublishOf(site.Stats{}, os.ErrPermission, t1, t1)); err != nil {
		t.Fatal(err)
	}
	if fams, err = ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := fams["prober_publish_last_success_timestamp_seconds"]; ok {
		t.Error("a last success time was written though none was known")
	}
}
