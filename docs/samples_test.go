package docs

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site"
)

var update = flag.Bool("update", false, "write the whole published file into each sample that no longer matches it (then abbreviate it again with … lines)")

// demo is a minute of make demo as it left it: the ranked and paused
// lists, the data directory after its run (the plan, the ledger, the
// history, the state, the tool definitions, the minute's marker), and the
// version of the build that ran it. The samples in the manual are what
// publish writes from it.
const demo = "testdata/demo"

// demoPublished is when the demo published, and demoContact the address it
// gives publish.
var demoPublished = time.Date(2026, 12, 4, 18, 16, 10, 74_000_000, time.UTC)

const demoContact = "probe@demo.test"

// sampled are the files whose samples are checked, and siteFiles the one
// that shows every kind of published file.
const siteFiles = "docs/site-files.md"

var sampled = []string{"README.md", siteFiles}

// publishDemo publishes the demo's minute as its publish did, into a
// directory of the test's, and returns the published files by path, the
// build's version in them as the demo's build wrote it.
func publishDemo(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	dataDir, out := filepath.Join(dir, "data"), filepath.Join(dir, "site")
	if err := os.CopyFS(dataDir, os.DirFS(filepath.Join(demo, "data"))); err != nil {
		t.Fatal(err)
	}
	_, err := site.Publish(t.Context(), site.Config{
		DataDir:     dataDir,
		ServersPath: filepath.Join(demo, "servers.csv"),
		PausedPath:  filepath.Join(demo, "paused.txt"),
		OutDir:      out,
		Now:         func() time.Time { return demoPublished },
		Contact:     demoContact,
	})
	if err != nil {
		t.Fatalf("publish the demo's minute: %v", err)
	}
	version, err := os.ReadFile(filepath.Join(demo, "version"))
	if err != nil {
		t.Fatal(err)
	}
	// The version as a word: a test build's "devel" is also in "developers".
	ours := regexp.MustCompile(`\b` + regexp.QuoteMeta(data.Version()) + `\b`)
	files := map[string]string{}
	for rel, b := range readTree(t, out, func(string) bool { return true }) {
		files[rel] = ours.ReplaceAllLiteralString(string(b), strings.TrimSpace(string(version)))
	}
	return files
}

// sampleBlock is a sample in a Markdown file: a comment naming the
// published file, then a fenced block holding it, whole or with "…" where
// a part is left out (sampleMatches). A JSON file is shown indented by two
// spaces, unless the comment says "as published".
var sampleBlock = regexp.MustCompile("(?m)^<!-- sample: ([^ ,]+)(, as published)? -->\n```[a-z]*\n((?s:.*?))^```$")

type sample struct {
	path        string // published file, relative to the output directory
	asPublished bool   // the bytes as written, not indented
	text        string
	start, end  int // the block's text in the Markdown file
}

func samplesOf(md string) []sample {
	var out []sample
	for _, m := range sampleBlock.FindAllStringSubmatchIndex(md, -1) {
		out = append(out, sample{
			path:        md[m[2]:m[3]],
			asPublished: m[4] >= 0,
			text:        md[m[6]:m[7]],
			start:       m[6],
			end:         m[7],
		})
	}
	return out
}

// view is how a sample shows a published file.
func (s sample) view(t *testing.T, published string) string {
	t.Helper()
	if s.asPublished || !strings.HasSuffix(s.path, ".json") {
		return published
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(strings.TrimSpace(published)), "", "  "); err != nil {
		t.Fatalf("%s: %v", s.path, err)
	}
	b.WriteByte('\n')
	return b.String()
}

// sampleMatches reports whether sample is text with parts left out where
// it says "…": a line of only "…" stands for any lines, a "…" within a line
// for any part of one; everything else is equal and in order, lines next to
// each other in the sample next to each other in the text.
func sampleMatches(sample, text string) bool {
	var re strings.Builder
	re.WriteString(`\A`)
	for _, l := range strings.Split(strings.TrimRight(sample, "\n"), "\n") {
		if strings.TrimSpace(l) == "…" {
			re.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		parts := strings.Split(l, "…")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re.WriteString(strings.Join(parts, `[^\n]*?`) + `\n`)
	}
	re.WriteString(`\z`)
	return regexp.MustCompile(re.String()).MatchString(strings.TrimRight(text, "\n") + "\n")
}

func TestSampleMatches(t *testing.T) {
	text := "{\n  \"a\": 1,\n  \"b\": [\n    2,\n    3\n  ],\n  \"c\": null\n}\n"
	for _, c := range []struct {
		name, sample string
		want         bool
	}{
		{"whole", text, true},
		{"elided", "{\n  \"a\": 1,\n  …\n  \"c\": null\n}\n", true},
		{"elided_to_the_end", "{\n  \"a\": 1,\n  …\n", true},
		{"changed_value", "{\n  \"a\": 2,\n  …\n", false},
		{"lines_apart_without_elision", "{\n  \"a\": 1,\n  \"c\": null\n}\n", false},
		{"out_of_order", "{\n  …\n  \"c\": null\n  …\n  \"a\": 1,\n  …\n", false},
		{"cut_short_without_elision", "{\n  \"a\": 1,\n", false},
		{"line_cut_short", "{\n  \"a\": 1\n  …\n", false},
		{"within_a_line", "{\n  \"a\": …,\n  \"b\": [\n…\n  \"c\": n…\n}\n", true},
		{"within_a_line_not_across_lines", "{\n  \"a\": …\n  3\n  …\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sampleMatches(c.sample, text); got != c.want {
				t.Errorf("sampleMatches(%q) = %v, want %v", c.sample, got, c.want)
			}
		})
	}
}

// firstMismatch is the first line of a sample not in the text, for the
// failure message.
func firstMismatch(sample, text string) string {
	lines := strings.Split(text, "\n")
	for _, l := range strings.Split(sample, "\n") {
		if strings.TrimSpace(l) != "…" && !slices.Contains(lines, l) {
			return l
		}
	}
	return "(every line is there, not in that order or with lines between them)"
}

// TestSamples: every sample of a published file in the manual is what
// publish writes for the demo's minute, and docs/site-files.md shows every
// kind of file publish writes.
func TestSamples(t *testing.T) {
	published, ids := publishDemo(t), demoIDs(t)
	kinds := map[string]bool{}
	for _, doc := range sampled {
		md := readDoc(t, doc)
		samples := samplesOf(md)
		if len(samples) == 0 {
			t.Errorf("%s: no sample of a published file (<!-- sample: PATH --> before a fenced block)", doc)
		}
		for i := len(samples) - 1; i >= 0; i-- { // from the end, so an update leaves the offsets before it valid
			s := samples[i]
			if doc == siteFiles {
				kinds[kindOf(ids, s.path)] = true
			}
			text, ok := published[s.path]
			if !ok {
				t.Errorf("%s: a sample of %s, which publish does not write for the demo", doc, s.path)
				continue
			}
			view := s.view(t, text)
			if sampleMatches(s.text, view) {
				continue
			}
			if *update {
				md = md[:s.start] + view + md[s.end:]
				continue
			}
			t.Errorf("%s: the sample of %s is not what publish writes for the demo's minute (go test ./docs -update writes the whole file in its place, to abbreviate again); first line not written: %s",
				doc, s.path, firstMismatch(s.text, view))
		}
		if *update {
			if err := os.WriteFile(filepath.Join(root, doc), []byte(md), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var missing []string
	for path := range published {
		if k := kindOf(ids, path); !kinds[k] {
			kinds[k] = true
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	for _, k := range missing {
		t.Errorf("%s shows no sample of %s, which publish writes: add one (<!-- sample: PATH --> before a fenced block)", siteFiles, k)
	}
}

// kindOf is a published path with the demo's server id in it written
// <id>: servers/docs-1319.json is servers/<id>.json.
func kindOf(ids []string, path string) string {
	for _, id := range ids {
		for _, suffix := range []string{".json", ".html", ".svg", ".atom"} {
			if strings.HasSuffix(path, "/"+id+suffix) {
				return strings.TrimSuffix(path, id+suffix) + "<id>" + suffix
			}
		}
	}
	return path
}

// demoIDs are the ids of the demo's ranked list.
func demoIDs(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(demo, "servers.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows[1:] {
		ids = append(ids, r[0])
	}
	return ids
}
