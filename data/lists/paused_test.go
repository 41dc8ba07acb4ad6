package lists

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"plug.directory/prober/data"
)

func TestPausedList(t *testing.T) {
	servers := []data.Server{
		{ID: "alpha", URL: "https://alpha.example/mcp"},
		{ID: "beta", URL: "https://Shared.example:443/mcp/"},
		{ID: "gamma", URL: "https://shared.example/mcp"},
		{ID: "local"}, // runs only locally: no address
	}
	for _, tc := range []struct {
		name      string
		file      string
		paused    string // sorted ids
		unmatched string // values
		bad       string // errors, one a line
	}{
		{
			name:   "R1_ids_comments_and_blank_lines",
			file:   "# owners asked\n\nalpha\n  local  # by email\n",
			paused: "alpha,local",
		},
		{
			name:   "R1_an_address_pauses_every_server_at_it",
			file:   "HTTPS://shared.EXAMPLE/mcp#x\n",
			paused: "beta,gamma",
		},
		{
			name:   "R1_an_entry_twice_and_an_address_two_ways_each_name_their_servers",
			file:   "alpha\nhttps://shared.example/mcp\nalpha\nhttps://SHARED.example/mcp/\n",
			paused: "alpha,beta,gamma",
		},
		{
			name:      "R1_an_id_that_is_only_an_address_of_a_server_names_none",
			file:      "https://alpha.example/MCP\nshared.example\n",
			unmatched: "https://alpha.example/MCP,shared.example",
		},
		{
			name:   "R1_CRLF_lines",
			file:   "alpha\r\ngamma\r\n",
			paused: "alpha,gamma",
		},
		{
			name:      "entries_naming_no_listed_server",
			file:      "zeta\nhttps://alpha.example/other\nhttps://alpha.example:8443/mcp\n",
			unmatched: "zeta,https://alpha.example/other,https://alpha.example:8443/mcp",
		},
		{
			name:   "R2_a_bad_line_does_not_resume_the_others",
			file:   "alpha beta\ngamma\nhttps://\n",
			paused: "gamma",
			bad:    "paused.txt:1: more than one entry on a line: \"alpha beta\"\npaused.txt:3: not an address: \"https://\"",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, bad, err := ParsePausedList("paused.txt", strings.NewReader(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := joinPausedErrs(bad); got != tc.bad {
				t.Errorf("bad = %q, want %q", got, tc.bad)
			}
			paused, unmatched := list.Match(servers)
			var ids []string
			for _, s := range servers {
				if paused[s.ID] {
					ids = append(ids, s.ID)
				}
			}
			if len(paused) != len(ids) {
				t.Errorf("paused %v holds ids that are not listed", paused)
			}
			var vals []string
			for _, e := range unmatched {
				vals = append(vals, e.Value)
			}
			if got := strings.Join(ids, ","); got != tc.paused {
				t.Errorf("paused = %s, want %s", got, tc.paused)
			}
			if got := strings.Join(vals, ","); got != tc.unmatched {
				t.Errorf("unmatched = %s, want %s", got, tc.unmatched)
			}
		})
	}
}

func TestPausedList_entries_keep_their_lines(t *testing.T) {
	list, _, _ := ParsePausedList("p", strings.NewReader("# x\n\nalpha # a\nhttps://a.example/\n"))
	want := []PausedEntry{{Line: 3, Value: "alpha"}, {Line: 4, Value: "https://a.example/"}}
	if !reflect.DeepEqual(list.Entries, want) || list.Entries[0].IsAddress() || !list.Entries[1].IsAddress() {
		t.Errorf("entries = %+v, want %+v", list.Entries, want)
	}
}

// TestNormalizeAddress: the paused list's
// addresses are compared in the one way of writing an address (AddressKey,
// which shared addresses use), so every spelling of a listed address
// pauses it (rule R1, P4), IDNA included, and none of another does.
func TestNormalizeAddress(t *testing.T) {
	for in, want := range map[string]string{
		"https://A.Example:443/mcp/":        "https://a.example/mcp",
		"HTTPS://a.example/mcp#frag":        "https://a.example/mcp",
		"https://a.example:8443/mcp":        "https://a.example:8443/mcp",
		"https://a.example/MCP":             "https://a.example/MCP", // paths are case-sensitive
		" https://a.example ":               "https://a.example",
		"https://bücher.example/mcp":        "https://xn--bcher-kva.example/mcp",
		"https://BÜCHER.example./mcp":       "https://xn--bcher-kva.example/mcp",
		"https://xn--bcher-kva.example/mcp": "https://xn--bcher-kva.example/mcp",
	} {
		if got := NormalizeAddress(in); got != want {
			t.Errorf("NormalizeAddress(%q) = %q, want %q", in, got, want)
		}
	}
	listed := []data.Server{
		{ID: "books", URL: "https://xn--bcher-kva.example/mcp"},
		{ID: "plain", URL: "https://a.example/mcp"},
		{ID: "other-port", URL: "https://a.example:8443/mcp"},
		{ID: "other-path", URL: "https://a.example/MCP"},
	}
	for _, tc := range []struct {
		entry string
		want  []string
	}{
		{"https://bücher.example/mcp", []string{"books"}},
		{"https://Bücher.Example:443/mcp/", []string{"books"}},
		{"https://A.EXAMPLE/mcp/", []string{"plain"}},
		{"https://a.example:443/mcp#x", []string{"plain"}},
		{"https://a.example:8443/mcp/", []string{"other-port"}},
		{"https://a.example/mcp/tools", nil},
	} {
		list, errs, err := ParsePausedList("paused.txt", strings.NewReader(tc.entry+"\n"))
		if err != nil || len(errs) > 0 {
			t.Fatalf("parse %q: %v %v", tc.entry, err, errs)
		}
		paused, _ := list.Match(listed)
		var got []string
		for _, s := range listed {
			if paused[s.ID] {
				got = append(got, s.ID)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("R1: %q pauses %q; want %q", tc.entry, got, tc.want)
		}
	}
}

func joinPausedErrs(errs []error) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = fmt.Sprint(e)
	}
	return strings.Join(s, "\n")
}

func TestLocalPausedList_R2(t *testing.T) {
	for _, tc := range []struct{ source, want string }{
		{"paused.txt", "paused.txt"},
		{"/srv/lists/paused.txt", "/srv/lists/paused.txt"},
		{"github:acme/dir/paused.txt@main", filepath.Join("DATA", "paused", "last-good.txt")},
	} {
		if got := LocalPausedList("DATA", tc.source); got != tc.want {
			t.Errorf("LocalPausedList(DATA, %q) = %q, want %q", tc.source, got, tc.want)
		}
	}
}

// TestReadPausedListFiles reads each testdata/paused file: a byte-order
// mark does not hide the first entry, and a list with a line that does not
// parse is refused whole with the exact error, never read in part (rule
// R2: leaving a line out would resume its server).
func TestReadPausedListFiles(t *testing.T) {
	dir := filepath.Join("testdata", "paused")
	for _, tc := range []struct {
		file string
		ids  string // entries read
		err  string // exact error, the directory left out
	}{
		{file: "valid-bom.txt", ids: "a-1,b-2"},
		{file: "invalid-two-entries.txt", err: `read paused list invalid-two-entries.txt: refused whole, 1 bad lines: invalid-two-entries.txt:2: more than one entry on a line: "a-1 b-2"`},
		{file: "invalid-not-an-address.txt", err: `read paused list invalid-not-an-address.txt: refused whole, 1 bad lines: invalid-not-an-address.txt:2: not an address: "https://"`},
		{file: "invalid-bom-mid-file.txt", err: "read paused list invalid-bom-mid-file.txt: refused whole, 1 bad lines: invalid-bom-mid-file.txt:2: invisible character in entry: \"\\ufeffb-2\""},
	} {
		t.Run("R2_"+strings.TrimSuffix(tc.file, ".txt"), func(t *testing.T) {
			list, err := ReadPausedList(filepath.Join(dir, tc.file))
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			}
			if got != tc.err {
				t.Errorf("err = %q\n want %q", got, tc.err)
			}
			var ids []string
			for _, e := range list.Entries {
				ids = append(ids, e.Value)
			}
			if strings.Join(ids, ",") != tc.ids {
				t.Errorf("entries %q, want %q", ids, tc.ids)
			}
		})
	}
}

// TestLoadPausedList_R2_last_good_copy_stands: a local list that is
// refused or goes missing leaves the pauses of its last good copy in
// force; a good list replaces the copy; with no copy a bad list is an
// error.
func TestLoadPausedList_R2_last_good_copy_stands(t *testing.T) {
	dir, src := t.TempDir(), filepath.Join(t.TempDir(), "paused.txt")
	step := func(content string, wantIDs string, wantStale, wantErr bool) {
		t.Helper()
		if content == "" {
			os.Remove(src)
		} else if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		list, stale, err := LoadPausedList(dir, src)
		var ids []string
		for _, e := range list.Entries {
			ids = append(ids, e.Value)
		}
		if (stale != nil) != wantStale || (err != nil) != wantErr || strings.Join(ids, ",") != wantIDs {
			t.Errorf("after %q: entries %q, stale %v, err %v; want %q, stale %v, err %v", content, ids, stale, err, wantIDs, wantStale, wantErr)
		}
	}
	step("a-1 b-2\n", "", false, true) // no good copy yet: no plan
	step("\ufeffa-1\nb-2\n", "a-1,b-2", false, false)
	step("a-1 b-2\n", "a-1,b-2", true, false) // refused: the copy stands
	step("", "a-1,b-2", true, false)          // missing: the copy stands
	step("b-2\n", "b-2", false, false)        // a good list resumes a-1
	if b, err := os.ReadFile(data.Dir(dir).PausedLocalCopy()); err != nil || string(b) != "b-2\n" {
		t.Errorf("copy = %q, %v; want the last good list", b, err)
	}
}

// BenchmarkPausedMatch matches a paused list of 100 entries, a fifth of
// them addresses, against a million servers, as the site does each time
// either list changes.
func BenchmarkPausedMatch(b *testing.B) {
	servers := make([]data.Server, 1_000_000)
	for i := range servers {
		servers[i] = data.Server{ID: fmt.Sprintf("srv-%07d", i), Rank: i + 1, URL: fmt.Sprintf("https://host-%d.example.net/mcp/%d", i%100_000, i)}
	}
	var text strings.Builder
	for i := 0; i < len(servers); i += 10_000 {
		if i%50_000 == 0 {
			text.WriteString(servers[i].URL + "\n")
		} else {
			text.WriteString(servers[i].ID + "\n")
		}
	}
	list, bad, err := ParsePausedList("paused.txt", strings.NewReader(text.String()))
	if err != nil || len(bad) > 0 {
		b.Fatal(err, bad)
	}
	for b.Loop() {
		if paused, unmatched := list.Match(servers); len(paused) != 100 || len(unmatched) > 0 {
			b.Fatalf("%d paused, %d unmatched; want 100, none", len(paused), len(unmatched))
		}
	}
}
