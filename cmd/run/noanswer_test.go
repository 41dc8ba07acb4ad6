package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site"
)

// TestNoAnswerHasNoLatency follows a check that got no answer (issue 20
// point 5) from the wire to the site: a server that takes the request and
// never answers, checked by a planned minute with a 1 s timeout, is
// failing with "no answer", the history keeps the check's measured
// duration, and the published latency_ms is null in the last result and
// the history, with no daily latency. The server counts what it received:
// the one request the check sent.
func TestNoAnswerHasNoLatency(t *testing.T) {
	var got atomic.Int32
	hold := make(chan struct{})
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select { // never answers: the check gives up first
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hold) })
	dir, out := t.TempDir(), t.TempDir()
	minute := time.Now().UTC().Truncate(time.Minute)
	srv := data.Server{ID: "silent", Rank: 1, URL: s.url, Added: minute.Add(-time.Hour)}
	var list bytes.Buffer
	if err := lists.WriteServers(&list, []data.Server{srv}); err != nil {
		t.Fatal(err)
	}
	servers := filepath.Join(t.TempDir(), "servers.csv")
	if err := os.WriteFile(servers, list.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spool.WritePlan(dir, minute, []data.PlannedCheck{{At: minute, Due: minute, ID: srv.ID, URL: srv.URL, Host: "mcp.test", Reason: data.ReasonNew, Rank: 1}}); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-timeout", "1s", "-data", dir, "-at", minute.Format("2006-01-02T15:04")); code != 0 {
		t.Fatalf("run: exit %d, %s %s", code, stdout, stderr)
	}
	rs, bad, err := history.ReadHistory(dir, minute, minute)
	if err != nil || len(bad) > 0 || len(rs) != 1 {
		t.Fatalf("history: %v %v %d results", err, bad, len(rs))
	}
	r := rs[0]
	if r.Status != data.Failing || !strings.HasPrefix(r.Detail, "no answer") || r.HTTPStatus != 0 || r.Duration < time.Second || got.Load() != int32(r.Requests) || r.Requests < 1 {
		t.Fatalf("result %s %q, HTTP %d, took %v, %d requests (the server got %d); want failing, no answer, the 1 s timeout measured",
			r.Status, r.Detail, r.HTTPStatus, r.Duration, r.Requests, got.Load())
	}
	now := r.Finished.Add(time.Minute)
	if _, err := site.Publish(context.Background(), site.Config{Contact: "probe@example.org", DataDir: dir, ServersPath: servers, OutDir: out,
		Now: func() time.Time { return now }, NoHTML: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "servers", "silent.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f site.ServerFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if f.LastResult == nil || f.LastResult.LatencyMS != nil || f.LastResult.HTTPStatus != nil || len(f.History) != 1 || f.History[0].LatencyMS != nil {
		t.Errorf("last result %+v, history %+v; want latency_ms and http_status null", f.LastResult, f.History)
	}
	if today := f.Daily[len(f.Daily)-1]; today.Counted != 1 || today.LatencyP50MS != nil || f.LatencyP50 != nil {
		t.Errorf("today %+v, 30-day median %v; want the check counted and no latency", today, f.LatencyP50)
	}
}
