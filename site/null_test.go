package site

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
)

// emptyValues returns the paths of the values in the JSON document b that
// stand for "does not apply" without being null: "" anywhere, and 0 for an
// HTTP status.
func emptyValues(b []byte) ([]string, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if n, ok := e.(float64); ok && n == 0 && strings.HasSuffix(k, "http_status") {
					out = append(out, path+"."+k+" = 0")
				}
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			if x == "" {
				out = append(out, path+` = ""`)
			}
		}
	}
	walk("$", v)
	return out, nil
}

// TestNullWhereNothingApplies proves "null for does not apply,
// everywhere": no published JSON file of a server of each status holds ""
// or an HTTP status of 0 (from, era, transport, tool_definitions.hash,
// next_check_from, url, http_status, reason were "" or 0 before).
func TestNullWhereNothingApplies(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	n := 0
	err := filepath.WalkDir(f.out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		empty, err := emptyValues(b)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, e := range empty {
			t.Errorf("%s: %s, want null", strings.TrimPrefix(path, f.out), e)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3*len(fixServers) {
		t.Fatalf("walked %d JSON files, want the files of %d servers", n, len(fixServers))
	}
	// The schema says so: it refuses this very file with "" or 0 in
	// place of any of those nulls.
	sch := mustSchema(t, "server.schema.json")
	b, err := os.ReadFile(filepath.Join(f.out, "servers", srvLocal.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  []string
		empty any
	}{
		{[]string{"url"}, ""}, {[]string{"reason"}, ""}, {[]string{"next_check_from"}, ""},
		{[]string{"last_result", "http_status"}, 0}, {[]string{"last_result", "era"}, ""}, {[]string{"last_result", "transport"}, ""},
		{[]string{"last_result", "protocol"}, ""}, {[]string{"last_result", "server_name"}, ""}, {[]string{"tool_definitions", "hash"}, ""},
	} {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		m := doc
		for _, k := range c.path[:len(c.path)-1] {
			m = m[k].(map[string]any)
		}
		m[c.path[len(c.path)-1]] = c.empty
		bad, _ := json.Marshal(doc)
		if sch.validate(bad) == nil {
			t.Errorf("server.schema.json accepts %s = %#v", strings.Join(c.path, "."), c.empty)
		}
	}
	delta := readServerFile(t, f, srvLocal.ID)
	if delta.URL != nil || delta.NextCheckFrom != nil || delta.LastResult == nil || delta.LastResult.HTTPStatus != nil || delta.LastResult.Era != nil {
		t.Errorf("delta (no address): url %v, next_check_from %v, last result %+v; want null", delta.URL, delta.NextCheckFrom, delta.LastResult)
	}
}

// TestLatencyOfNoAnswer: a check that got no answer
// (it timed out after the 45 s of rule N10) has latency_ms null in the last
// result and the history, and the daily p50 and p95 and the 30-day median
// are those of the answered checks alone, while the Parquet history keeps
// the measured duration. The clock is the fixture's: the timed-out check
// took 45.005 s of it.
func TestLatencyOfNoAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := data.Server{ID: "hotel", Rank: 8, URL: "https://hotel.example.com/mcp", Added: fixNow.Add(-10 * 24 * time.Hour)}
	f.writeServers([]data.Server{srv})
	early, late := fixNow.Add(-3*time.Hour), fixNow.Add(-2*time.Hour)
	timedOut := result(srv, fixNow.Add(-time.Hour), data.Failing, "no answer in 45 s")
	timedOut.Duration = data.CheckTimeout + 5*time.Millisecond
	timedOut.Finished = timedOut.Started.Add(timedOut.Duration)
	f.results(result(srv, early, data.Working, ""), result(srv, late, data.Working, ""), timedOut)
	f.fold()
	f.MustPublish()
	sf := readServerFile(t, f, srv.ID)
	if sf.LastResult == nil || sf.LastResult.LatencyMS != nil || sf.LastResult.HTTPStatus != nil {
		t.Fatalf("last result %+v, want latency_ms and http_status null", sf.LastResult)
	}
	if len(sf.History) != 3 || sf.History[0].LatencyMS != nil || sf.History[1].LatencyMS == nil || *sf.History[1].LatencyMS != 1200 {
		t.Errorf("history %+v, want the timed-out check's latency null and the others' 1200 ms", sf.History)
	}
	today := sf.Daily[len(sf.Daily)-1]
	if today.Counted != 3 || today.LatencyP50MS == nil || *today.LatencyP50MS != 1200 || *today.LatencyP95MS != 1200 {
		t.Errorf("today %+v, want 3 counted and p50 = p95 = 1200 ms: the timed-out check is not in them", today)
	}
	if sf.LatencyP50 == nil || *sf.LatencyP50 != 1200 {
		t.Errorf("latency_p50_ms_30d %v, want 1200", sf.LatencyP50)
	}
	b, err := os.ReadFile(filepath.Join(f.out, "servers", srv.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "45005") {
		t.Errorf("the file holds the timed-out check's duration 45005 ms as a latency")
	}
	hist, bad, err := history.ReadHistory(f.dir, fixNow.Add(-24*time.Hour), fixNow)
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	var kept bool
	for _, r := range hist {
		kept = kept || (r.Status == data.Failing && r.Duration == timedOut.Duration)
	}
	if !kept {
		t.Errorf("the Parquet history lost the measured duration of the timed-out check")
	}
	validateTree(t, f.out)
	// A publish that reads its record back gives the same.
	f.now = fixNow.Add(time.Minute)
	f.MustPublish()
	if again := readServerFile(t, f, srv.ID); again.LastResult.LatencyMS != nil || again.History[0].LatencyMS != nil {
		t.Errorf("after a publish from the record: last result latency %v, history %v; want null", again.LastResult.LatencyMS, again.History[0].LatencyMS)
	}
}
