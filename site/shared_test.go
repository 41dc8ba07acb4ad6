package site

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestPublishSharedAddress: servers listed at one address
// each have the one check's result, and each page names the others at
// the address (shared_with, valid against the schema, from the publish
// after a server joins the address); a pause naming one
// of them shows every one of them paused (rule P4).
func TestPublishSharedAddress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := data.Server{ID: "a", Rank: 1, URL: "https://same.example.com/mcp", Added: fixNow.Add(-90 * 24 * time.Hour)}
	b := data.Server{ID: "b", Rank: 2, URL: "https://Same.Example.com:443/mcp", Added: a.Added}
	c := data.Server{ID: "c", Rank: 3, URL: "https://other.example.com/mcp", Added: a.Added}
	f.writeServers([]data.Server{a, c})
	f.results(result(a, fixNow.Add(-time.Hour), data.Working, "ok"))
	f.MustPublish()
	// b joins a's address: a's page names it from the next publish, before
	// any new check.
	f.writeServers([]data.Server{a, b, c})
	f.MustPublish()
	if sf := readServerFile(t, f, "a"); !slices.Equal(sf.SharedWith, []string{"b"}) {
		t.Errorf("after b joined, a is shared with %v, want [b]", sf.SharedWith)
	}
	at := fixNow.Add(-10 * time.Minute)
	lead := result(a, at, data.Working, "ok")
	check := data.PlannedCheck{ID: a.ID, URL: a.URL, Also: []data.Listing{{ID: b.ID, URL: b.URL}}}
	f.results(append(check.Results(lead), result(c, at, data.Working, "ok"))...)
	f.MustPublish()
	schema := mustSchema(t, "server.schema.json")
	want := map[string][]string{"a": {"b"}, "b": {"a"}, "c": nil}
	for id, others := range want {
		sf := readServerFile(t, f, id)
		if !slices.Equal(sf.SharedWith, others) || sf.Status != data.Working || sf.LastCheck == nil || !sf.LastCheck.Equal(at) {
			t.Errorf("%s: shared with %v, %s at %v; want %v, working at %s", id, sf.SharedWith, sf.Status, sf.LastCheck, others, at)
		}
		raw, err := os.ReadFile(filepath.Join(f.out, "servers", id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.validate(raw); err != nil {
			t.Errorf("%s.json: %v", id, err)
		}
	}
	page, err := os.ReadFile(filepath.Join(f.out, "servers", "b.html"))
	if err != nil || !strings.Contains(string(page), `<a href="../servers/a.html">a</a>: one check serves all`) {
		t.Errorf("b.html does not name a: %v", err)
	}
	f.writePaused("b\n")
	f.MustPublish()
	for id, wantStatus := range map[string]data.Outcome{"a": data.Paused, "b": data.Paused, "c": data.Working} {
		if sf := readServerFile(t, f, id); sf.Status != wantStatus {
			t.Errorf("after pausing b, %s is %s, want %s", id, sf.Status, wantStatus)
		}
	}
}
