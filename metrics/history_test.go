package metrics

import (
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data/history"
)

// TestRunHistoryDamage: the run's metrics count the
// history files restored from their second copy and name, with their day
// and minutes, the ones whose checks are lost; none lost is no series, and
// the restored count is there at 0.
func TestRunHistoryDamage(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 19, 26, 0, 0, time.UTC)
	tests := []struct {
		name     string
		damage   []history.HistoryDamage
		restored float64
		lost     map[string]string // label file -> minutes
	}{
		{name: "none"},
		{name: "restored_and_lost", restored: 2, lost: map[string]string{"results/date=2026-12-02/part-run-20261202T1925-42.parquet": "19:25"}, damage: []history.HistoryDamage{
			{File: "results/date=2026-12-02/part-run-20261202T1901-42.parquet", Day: "2026-12-02", Minutes: []string{"19:01"}, Restored: true},
			{File: "results/date=2026-12-01/merged-000001.parquet", Day: "2026-12-01", Restored: true},
			{File: "results/date=2026-12-02/part-run-20261202T1925-42.parquet", Day: "2026-12-02", Minutes: []string{"19:25"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.prom")
			if err := WriteRun(path, Run{Minute: t0, Finished: t0, OK: true, HistoryDamage: tt.damage}); err != nil {
				t.Fatal(err)
			}
			fams, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fams["prober_history_files_restored"].GetMetric()[0].GetGauge().GetValue(); got != tt.restored {
				t.Errorf("restored %v, want %v", got, tt.restored)
			}
			got := map[string]string{}
			for _, m := range fams["prober_history_lost_checks"].GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				if m.GetGauge().GetValue() != 1 || l["day"] != "2026-12-02" {
					t.Errorf("lost series %v = %v", l, m.GetGauge().GetValue())
				}
				got[l["file"]] = l["minutes"]
			}
			if len(got) != len(tt.lost) {
				t.Errorf("lost %v, want %v", got, tt.lost)
			}
			for f, m := range tt.lost {
				if got[f] != m {
					t.Errorf("lost %s: minutes %q, want %q", f, got[f], m)
				}
			}
		})
	}
}
