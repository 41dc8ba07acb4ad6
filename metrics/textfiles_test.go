package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/site"
)

// writeBoth writes the run's and the publish's files into dir, as
// deploy/minute.sh has them for node_exporter's textfile collector.
func writeBoth(t *testing.T, dir string) {
	t.Helper()
	t0 := time.Date(2026, 12, 2, 10, 34, 0, 0, time.UTC)
	run := Run{Minute: t0.Add(-time.Minute), Finished: t0, OK: true, Planned: 3,
		Checks: map[Check]int{{data.Working, data.ReasonRoutine}: 3}, Lateness: []time.Duration{time.Millisecond}, Plan: PlanFigures{Known: true},
		HistoryDamage: []history.HistoryDamage{{File: "results/date=2026-12-02/part-run-20261202T1025-42.parquet", Day: "2026-12-02", Minutes: []string{"10:25"}}}}
	if err := WriteRun(filepath.Join(dir, "run.prom"), run); err != nil {
		t.Fatal(err)
	}
	if err := WritePublish(filepath.Join(dir, "publish.prom"), PublishOf(site.Stats{Servers: 3}, nil, t0, t0.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
}

// TestTextfilesGatherTogether: the files of every step, gathered together
// by the client library's own gatherer (what node_exporter's textfile
// collector does), hold no series twice and no metric with two helps.
func TestTextfilesGatherTogether(t *testing.T) {
	dir := t.TempDir()
	writeBoth(t, dir)
	var gs prometheus.Gatherers
	for _, name := range []string{"run.prom", "publish.prom"} {
		path := filepath.Join(dir, name)
		gs = append(gs, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			fams, err := ReadFile(path)
			var out []*dto.MetricFamily
			for _, f := range fams {
				out = append(out, f)
			}
			return out, err
		}))
	}
	fams, err := gs.Gather()
	if err != nil {
		t.Fatalf("gathering run.prom and publish.prom together: %v", err)
	}
	var info *dto.MetricFamily
	for _, f := range fams {
		if f.GetName() == "prober_build_info" {
			info = f
		}
	}
	if info == nil || len(info.GetMetric()) != 2 {
		t.Fatalf("prober_build_info %v: want one series per file", info)
	}
}

// TestNodeExporterTextfile runs Debian's prometheus-node-exporter with only
// its textfile collector over the files of every step, on a loopback port,
// scrapes it and asserts it read them without an error: no scrape error,
// nothing logged at level error, every prober metric served.
func TestNodeExporterTextfile(t *testing.T) {
	exe, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		t.Skip("prometheus-node-exporter is not installed (Debian's package; .ci/tools installs it): the textfile collector is not tried")
	}
	dir := t.TempDir()
	writeBoth(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(exe, "--collector.disable-defaults", "--collector.textfile",
		"--collector.textfile.directory="+dir, "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }() // the process this test started, by its PID
	body, err := scrape(t, "http://"+addr+"/metrics")
	if err != nil {
		t.Fatalf("scrape node_exporter: %v\n%s", err, logs.String())
	}
	for _, want := range []string{"node_textfile_scrape_error 0", `prober_build_info{step="publish"`, `prober_build_info{step="run"`, "prober_run_success 1", "prober_publish_success 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	sc := bufio.NewScanner(&logs)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "level=error") || strings.Contains(line, "collected before") {
			t.Errorf("node_exporter logged: %s", line)
		}
	}
}

// scrape GETs url until node_exporter answers (it takes a moment to
// listen), at most 10 s.
func scrape(t *testing.T, url string) (string, error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode != http.StatusOK {
				rerr = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
			}
			return string(b), rerr
		}
		if time.Now().After(deadline) {
			return "", err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
