package site

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// readServerFile decodes a published server file.
func readServerFile(t *testing.T, f *fixture, id string) record.ServerFile {
	t.Helper()
	var sf record.ServerFile
	mustReadJSON(t, filepath.Join(f.out, "servers", id+".json"), &sf)
	return sf
}

// mustReadJSON decodes the JSON file at path into v.
func mustReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// inodes returns the inode of every file under root: a file replaced by
// rename gets a new one.
func inodes(t *testing.T, root string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for rel := range testutil.MustTree(t, root) {
		fi, err := os.Stat(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = fi.Sys().(*syscall.Stat_t).Ino
	}
	return out
}

// replaced returns the files whose inode changed or that appeared.
func replaced(before, after map[string]uint64) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// publishedKinds says how every file a publish writes is checked, by its
// top directory ("" for the files at the top) and its name's ending: JSON
// against its schema under schema/, Atom and SVG as well-formed XML, HTML
// and text by their golden and template tests (check ""). A file of a
// directory or kind not listed fails validateTree, so a directory the site
// starts to write cannot go unchecked.
var publishedKinds = []struct{ dir, suffix, check string }{
	{"", "index.json", "index.schema.json"},
	{"index", ".json", "index-part.schema.json"},
	{"", "probe.json", "probe.schema.json"},
	{"", "status.json", "status.schema.json"},
	{"", "feed.atom", "xml"},
	{"", ".html", ""},
	{"", "checks.txt", ""},
	{"", "site.css", ""}, // the pages' stylesheet and script: golden, and the pages' browser tests
	{"", "site.js", ""},
	{"servers", ".json", "server.schema.json"},
	{"servers", ".html", ""},
	{"badges", ".json", "badge.schema.json"},
	{"badges-uptime", ".json", "badge.schema.json"},
	{"badges-latency", ".json", "badge.schema.json"},
	{"badges-certificate", ".json", "badge.schema.json"},
	{strip.Dir, ".svg", "xml"},
	{"feeds", ".atom", "xml"},
}

// validateTree checks every file under out as publishedKinds says: each
// JSON file against its schema, each XML file for being well formed; a
// file of no listed kind is an error.
func validateTree(t *testing.T, out string) {
	t.Helper()
	schemas := map[string]*schema{}
	n := 0
	for rel, b := range testutil.MustTree(t, out) {
		dir, _, _ := strings.Cut(rel, "/")
		if !strings.Contains(rel, "/") {
			dir = ""
		}
		i := slices.IndexFunc(publishedKinds, func(k struct{ dir, suffix, check string }) bool {
			return k.dir == dir && strings.HasSuffix(rel, k.suffix)
		})
		if i < 0 {
			t.Errorf("%s: published, but no schema or check says what it must hold", rel)
			continue
		}
		var err error
		switch c := publishedKinds[i].check; c {
		case "":
			continue
		case "xml":
			err = wellFormedXML(b)
		default:
			if schemas[c] == nil {
				schemas[c] = mustSchema(t, c)
			}
			err = schemas[c].validate(b)
		}
		n++
		if err != nil {
			t.Errorf("%s does not validate against %s: %v", rel, publishedKinds[i].check, err)
		}
	}
	if n == 0 {
		t.Error("no file to validate")
	}
}

// wellFormedXML returns an error unless b is one well-formed XML document.
func wellFormedXML(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// publicFiles are the public files of one server.
func publicFiles(id string) []string {
	return []string{"servers/" + id + ".json", "servers/" + id + ".html", "badges/" + id + ".json", "badges-uptime/" + id + ".json",
		"badges-latency/" + id + ".json", "badges-certificate/" + id + ".json", "badges-strip/" + id + ".svg", "feeds/" + id + ".atom"}
}

func TestPublishGolden(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	st := f.MustPublish()
	if !st.Rebuilt || st.Servers != len(fixServers) || len(st.Bad) != 0 {
		t.Errorf("stats = %+v, want a rebuild of %d servers without bad input", st, len(fixServers))
	}
	got := testutil.MustTree(t, f.out)
	t.Run("P1_P2_golden_tree", func(t *testing.T) {
		for rel, b := range got {
			golden(t, "golden/"+rel, b)
		}
		if !testutil.Updating() {
			want := testutil.MustTree(t, filepath.Join("testdata", "golden"))
			for rel := range want {
				if _, ok := got[rel]; !ok {
					t.Errorf("golden file %s not published", rel)
				}
			}
		}
	})
	t.Run("P1_schemas", func(t *testing.T) { validateTree(t, f.out) })
	t.Run("P3_no_temporary_files", func(t *testing.T) {
		for rel := range got {
			if strings.Contains(rel, ".tmp-") {
				t.Errorf("temporary file %s left behind", rel)
			}
		}
	})
}

func TestPublishRules(t *testing.T) {
	t.Parallel()
	const (
		reads   = true  // reads what the first publish wrote: shares one fixture with the other readers
		changes = false // changes the fixture: has a copy of its own
	)
	cases := []struct {
		name  string
		reads bool
		run   func(t *testing.T, f *fixture)
	}{
		{"O_labels_and_reasons", reads, func(t *testing.T, f *fixture) {
			want := map[string][2]string{
				"alpha": {"working", "working"}, "bravo": {"needs_key", "needs a key"}, "charlie": {"refused", "refused our check"},
				"delta": {"not_checkable", "not checkable by us"}, "echo": {"failing", "failing"},
				"foxtrot": {"paused", "checks paused at the owner's request"}, "golf": {"pending", "not checked yet"},
			}
			for id, w := range want {
				sf := readServerFile(t, f, id)
				if string(sf.Status) != w[0] || sf.Label != w[1] {
					t.Errorf("%s: status %q label %q, want %q %q", id, sf.Status, sf.Label, w[0], w[1])
				}
			}
			if sf := readServerFile(t, f, "echo"); record.ValueOf(sf.Detail) != "connection refused" || sf.FailingSince == nil || !sf.FailingSince.Equal(fixNow.Add(-50*time.Minute)) {
				t.Errorf("echo: reason %q failing since %v", record.ValueOf(sf.Detail), sf.FailingSince)
			}
		}},
		{"O_uptime_counts_only_working_needs_key_failing", reads, func(t *testing.T, f *fixture) {
			a := readServerFile(t, f, "alpha")
			if a.Uptime.Day.Counted != 24 || *a.Uptime.Day.Percent != 100 || a.Uptime.Week.Counted != 168 || a.Uptime.Week.Answered != 167 ||
				a.Uptime.Month.Counted != 192 || a.Uptime.Month.Answered != 190 {
				t.Errorf("alpha uptime = %+v", a.Uptime)
			}
			c := readServerFile(t, f, "charlie") // refused an hour ago, working two hours ago
			if c.Uptime.Day.Counted != 1 || *c.Uptime.Day.Percent != 100 {
				t.Errorf("charlie: refused counted against it: %+v", c.Uptime.Day)
			}
			d := readServerFile(t, f, "delta") // only not_checkable
			if d.Uptime.Month.Counted != 0 || d.Uptime.Month.Percent != nil {
				t.Errorf("delta: not_checkable counted: %+v", d.Uptime.Month)
			}
			b := readServerFile(t, f, "bravo") // needs_key answered
			if *b.Uptime.Day.Percent != 100 {
				t.Errorf("bravo: needs_key counted against it: %+v", b.Uptime.Day)
			}
		}},
		{"P1_history_newest_first_at_most_48", reads, func(t *testing.T, f *fixture) {
			a := readServerFile(t, f, "alpha")
			if len(a.History) != record.HistoryLen || !a.History[0].Started.Equal(a.LastCheck.Time) ||
				!slices.IsSortedFunc(a.History, func(x, y record.Check) int { return y.Started.Compare(x.Started.Time) }) {
				t.Errorf("alpha history: %d entries, first %v", len(a.History), a.History[0].Started)
			}
			if _, err := os.Stat(olderPath(f.dir, "alpha")); err != nil {
				t.Errorf("alpha's checks beyond its history are not kept: %v", err)
			}
		}},
		{"P1_next_check_and_effective_cadence", reads, func(t *testing.T, f *fixture) {
			g := readServerFile(t, f, "golf")
			if record.ValueOf(g.NextCheckFrom) != "plan" || !g.NextCheck.Equal(fixNow.Add(2*time.Minute)) {
				t.Errorf("golf next check %v from %q, want the ledger's", g.NextCheck, record.ValueOf(g.NextCheckFrom))
			}
			a := readServerFile(t, f, "alpha")
			if a.EffectiveCad != 7200 || a.CadenceSeconds != 3600 || record.ValueOf(a.NextCheckFrom) != "plan" {
				t.Errorf("alpha cadence %d effective %d next from %q", a.CadenceSeconds, a.EffectiveCad, record.ValueOf(a.NextCheckFrom))
			}
			e := readServerFile(t, f, "echo") // S6: failing, answered before, streak younger than an hour
			if record.ValueOf(e.NextCheckFrom) != "estimate" || !e.NextCheck.Equal(fixNow.Add(-40*time.Minute)) {
				t.Errorf("echo next check %v from %q, want the S6 retry", e.NextCheck, record.ValueOf(e.NextCheckFrom))
			}
		}},
		{"P1_times_at_millisecond_precision", reads, func(t *testing.T, f *fixture) {
			// A journal keeps nanoseconds, Parquet milliseconds: files show
			// milliseconds, so a rebuild from Parquet gives the same bytes.
			long := regexp.MustCompile(`\.[0-9]{4,}Z`)
			for rel, b := range testutil.MustTree(t, f.out) {
				if m := long.Find(b); m != nil {
					t.Errorf("%s holds a time finer than a millisecond: %s", rel, m)
				}
			}
			if b := readServerFile(t, f, "bravo"); !b.LastCheck.Equal(hourAgo.Add(123 * time.Millisecond)) {
				t.Errorf("bravo last check %v", b.LastCheck)
			}
		}},
		{"P4_paused_keeps_last_result", reads, func(t *testing.T, f *fixture) {
			p := readServerFile(t, f, "foxtrot")
			if p.LastResult == nil || p.LastResult.Status != data.Working || p.NextCheck != nil || len(p.History) != 1 {
				t.Errorf("foxtrot: last result %+v, next %v, history %d", p.LastResult, p.NextCheck, len(p.History))
			}
		}},
		{"P4_resumed_when_unpaused", changes, func(t *testing.T, f *fixture) {
			f.writePaused("")
			f.MustPublish()
			if p := readServerFile(t, f, "foxtrot"); p.Status != data.Working {
				t.Errorf("foxtrot after unpausing: %q", p.Status)
			}
		}},
		{"R2_unreadable_paused_list_resumes_nothing", changes, func(t *testing.T, f *fixture) {
			if err := os.Remove(f.paused); err != nil {
				t.Fatal(err)
			}
			st := f.MustPublish()
			if p := readServerFile(t, f, "foxtrot"); p.Status != data.Paused {
				t.Errorf("foxtrot: %q", p.Status)
			}
			if len(st.Bad) == 0 || !strings.Contains(st.Bad[0].Error(), "paused") {
				t.Errorf("bad = %v, want the paused list named", st.Bad)
			}
		}},
		{"P4_pending", reads, func(t *testing.T, f *fixture) {
			g := readServerFile(t, f, "golf")
			if g.LastCheck != nil || g.LastResult != nil || len(g.History) != 0 || g.Uptime.Day.Percent != nil {
				t.Errorf("golf: %+v", g)
			}
		}},
		{"P4_removed_server_leaves", changes, func(t *testing.T, f *fixture) {
			f.writeServers(slices.DeleteFunc(slices.Clone(fixServers), func(s data.Server) bool { return s.ID == "echo" }))
			st := f.MustPublish()
			for _, rel := range publicFiles("echo") {
				if _, err := os.Stat(filepath.Join(f.out, rel)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s still there: %v", rel, err)
				}
			}
			idx := readIndex(t, f)
			for _, r := range idx.Rows {
				if r.ID == "echo" {
					t.Error("echo still in the index")
				}
			}
			if idx.Servers != len(fixServers)-1 || st.Servers != len(fixServers)-1 || st.Removed < 3 {
				t.Errorf("index has %d servers, stats %+v", idx.Servers, st)
			}
		}},
		{"P4_new_address_is_a_new_server", changes, func(t *testing.T, f *fixture) {
			moved := slices.Clone(fixServers)
			moved[1].URL = "https://bravo.example.net/mcp"
			f.writeServers(moved)
			f.MustPublish()
			if b := readServerFile(t, f, "bravo"); b.Status != data.Pending || record.ValueOf(b.URL) != moved[1].URL || b.LastResult != nil {
				t.Errorf("bravo at a new address: %q %q", b.Status, record.ValueOf(b.URL))
			}
			f.results(result(moved[1], fixNow.Add(-10*time.Second), data.Working, ""))
			f.MustPublish()
			if b := readServerFile(t, f, "bravo"); b.Status != data.Working || len(b.History) != 1 {
				t.Errorf("bravo checked at its new address: %q, %d checks", b.Status, len(b.History))
			}
		}},
		{"P3_unchanged_run_rewrites_nothing", changes, func(t *testing.T, f *fixture) {
			before := inodes(t, f.out)
			st := f.MustPublish()
			if st.Written != 0 || st.Rendered != 0 {
				t.Errorf("second run: %+v", st)
			}
			if r := replaced(before, inodes(t, f.out)); len(r) != 0 {
				t.Errorf("files replaced: %v", r)
			}
		}},
		{"P3_only_changed_files_rewritten", changes, func(t *testing.T, f *fixture) {
			before := inodes(t, f.out)
			// Before alpha's oldest check leaves its 24 h window at 12:00:17.
			f.now = fixNow.Add(10 * time.Second)
			f.results(result(srvKey, fixNow.Add(5*time.Second), data.NeedsKey, "HTTP 401"))
			st := f.MustPublish()
			// status.json says when this publish was: the clock moved.
			// bravo's strip stays: one more answered check leaves its
			// colours and its uptime as they were.
			// The index's one part is a new file of a new name.
			want := []string{"index.html", "index.json", readIndex(t, f).Parts[0].Path, "servers/bravo.html", "servers/bravo.json", "status.json"}
			slices.Sort(want)
			if r := replaced(before, inodes(t, f.out)); !slices.Equal(r, want) {
				t.Errorf("files replaced: %v, want %v", r, want)
			}
			if st.Rendered != 1 || st.Results != 1 {
				t.Errorf("stats %+v", st)
			}
		}},
		{"P3_journal_then_parquet_is_idempotent", changes, func(t *testing.T, f *fixture) {
			before := inodes(t, f.out)
			f.fold() // the journal read by the first run becomes a Parquet part
			st := f.MustPublish()
			if st.Results == 0 {
				t.Error("the new Parquet part was not read")
			}
			if r := replaced(before, inodes(t, f.out)); len(r) != 0 {
				t.Errorf("files replaced by results already published: %v", r)
			}
		}},
		{"P3_rebuild_gives_the_same_files", changes, func(t *testing.T, f *fixture) {
			want := testutil.MustTree(t, f.out)
			if err := os.RemoveAll(filepath.Join(f.dir, "site")); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(f.out); err != nil {
				t.Fatal(err)
			}
			if st := f.MustPublish(); !st.Rebuilt {
				t.Error("not a rebuild")
			}
			if got := testutil.MustTree(t, f.out); !maps.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("a rebuild wrote other files: %d, want %d, index.json\n%s\nwant\n%s", len(got), len(want), got["index.json"], want["index.json"])
			}
			// A rebuild without a state, over files of servers no longer
			// listed, removes them.
			f.writeServers(slices.DeleteFunc(slices.Clone(fixServers), func(s data.Server) bool { return s.ID == "golf" }))
			if err := os.RemoveAll(filepath.Join(f.dir, "site")); err != nil {
				t.Fatal(err)
			}
			f.MustPublish()
			for _, rel := range publicFiles("golf") {
				if _, ok := testutil.MustTree(t, f.out)[rel]; ok {
					t.Errorf("%s left by a rebuild", rel)
				}
				delete(want, rel)
			}
			delete(want, "index.json")
			delete(want, "index.html")
			for rel := range want {
				if strings.HasPrefix(rel, "index/") { // the part golf was in
					delete(want, rel)
				}
			}
			got := testutil.MustTree(t, f.out)
			for rel, b := range want {
				if string(got[rel]) != string(b) {
					t.Errorf("%s differs after a rebuild:\n got %.300s\nwant %.300s", rel, got[rel], b)
				}
			}
		}},
		{"corrupt_site_state_is_named_and_rebuilt", changes, func(t *testing.T, f *fixture) {
			want := testutil.MustTree(t, f.out)
			if err := os.WriteFile(data.Dir(f.dir).SiteStore(), []byte("not a state"), 0o644); err != nil {
				t.Fatal(err)
			}
			st := f.MustPublish()
			if !st.Rebuilt || len(st.Bad) != 1 || !strings.Contains(st.Bad[0].Error(), "state.bin") {
				t.Errorf("rebuilt %v, bad %v", st.Rebuilt, st.Bad)
			}
			if got := testutil.MustTree(t, f.out); len(got) != len(want) || string(got["index.json"]) != string(want["index.json"]) {
				t.Error("rebuild after a corrupt state changed the site")
			}
		}},
		{"P1_uptime_ages_without_new_checks", changes, func(t *testing.T, f *fixture) {
			f.now = fixNow.Add(22*time.Hour + 30*time.Minute) // only the check of 11:00:17 is left in 24 h
			st := f.MustPublish()
			a := readServerFile(t, f, "alpha")
			if a.Uptime.Day.Counted != 1 || st.Rendered == 0 {
				t.Errorf("alpha 24 h uptime a day later: %+v (rendered %d)", a.Uptime.Day, st.Rendered)
			}
		}},
		{"bad_parquet_and_journal_lines_are_named_and_skipped", changes, func(t *testing.T, f *fixture) {
			bad := filepath.Join(data.Dir(f.dir).Results(), "date=2026-12-02", "part-broken.parquet")
			if err := os.WriteFile(bad, []byte("PAR1 not really"), 0o644); err != nil {
				t.Fatal(err)
			}
			j := filepath.Join(data.Dir(f.dir).JournalDir(), "run-broken.jsonl")
			good, _ := json.Marshal(result(srvKey, fixNow.Add(-5*time.Second), data.NeedsKey, "HTTP 401"))
			if err := os.WriteFile(j, append(append([]byte("{not json\n"), good...), '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			st := f.MustPublish()
			var named []string
			for _, e := range st.Bad {
				named = append(named, e.Error())
			}
			all := strings.Join(named, "\n")
			if !strings.Contains(all, "part-broken.parquet") || !strings.Contains(all, "run-broken.jsonl:1") {
				t.Errorf("bad inputs not named: %v", named)
			}
			if b := readServerFile(t, f, "bravo"); !b.LastCheck.Equal(fixNow.Add(-5 * time.Second)) {
				t.Errorf("the good line after the bad one was not published: %v", b.LastCheck)
			}
		}},
		{"empty_list_publishes_nothing", changes, func(t *testing.T, f *fixture) {
			want := testutil.MustTree(t, f.out)
			f.writeFile(f.list, []byte("id,rank,url,added\n"))
			if _, err := Publish(context.Background(), f.config()); !errors.Is(err, lists.ErrEmptyList) {
				t.Errorf("err = %v, want ErrEmptyList", err)
			}
			if got := testutil.MustTree(t, f.out); len(got) != len(want) {
				t.Errorf("%d files after a failed publish, want %d", len(got), len(want))
			}
		}},
	}
	shared := newStandard(t) // the readers', published and validated once
	shared.MustPublish()
	validateTree(t, shared.out)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.reads {
				f := *shared
				f.tb = t
				c.run(t, &f)
				return
			}
			f := newStandard(t)
			f.MustPublish()
			c.run(t, f)
			validateTree(t, f.out)
		})
	}
}
