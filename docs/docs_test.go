// Package docs holds the prober's manual; its tests keep the manual honest:
// the README short, every relative link and anchor pointing somewhere, no
// pointer a reader of a clone cannot follow, and every sample of a published
// file equal to what publish writes for the demo's recorded checks
// (samples_test.go).
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository, seen from this package's directory.
const root = ".."

// readmeMaxLines is what a newcomer reads in five minutes.
const readmeMaxLines = 300

// manual is the README and every file under docs/, as paths from root.
func manual(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	md, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range md {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadmeShort(t *testing.T) {
	n := strings.Count(readDoc(t, "README.md"), "\n")
	if n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into docs/ and link to it", n, readmeMaxLines)
	}
}

// fence matches a fenced code block, whose text is no link.
var fence = regexp.MustCompile("(?ms)^```.*?^```[^\n]*$")

// codeSpan matches inline code, whose text is no link either.
var codeSpan = regexp.MustCompile("`[^`\n]*`")

// link matches an inline Markdown link or image: its target is group 1.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

var heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)

// prose is text without its code blocks and code spans.
func prose(text string) string {
	return codeSpan.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
}

// anchors returns the anchors GitHub gives the headings of a Markdown text:
// lowercased, punctuation but - and _ dropped, spaces as -, a repeated one
// numbered.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f && !strings.ContainsRune("…→—–’“”", r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// brokenLinks returns what is wrong with the relative links of doc, a
// path from root: a file that is not there, or an anchor that no heading of
// a Markdown file gives. read returns a file by its path from root, false
// when there is none.
func brokenLinks(doc string, read func(rel string) (string, bool)) []string {
	text, _ := read(doc)
	var broken []string
	for _, m := range link.FindAllStringSubmatch(prose(text), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		path, frag, _ := strings.Cut(target, "#")
		file := doc
		if path != "" {
			file = filepath.ToSlash(filepath.Join(filepath.Dir(doc), path))
		}
		linked, ok := read(file)
		switch {
		case !ok:
			broken = append(broken, fmt.Sprintf("%s: link %s: %s is not in the repository", doc, target, file))
		case frag != "" && strings.HasSuffix(file, ".md") && !anchors(linked)[frag]:
			broken = append(broken, fmt.Sprintf("%s: link %s: %s has no heading with the anchor #%s", doc, target, file, frag))
		}
	}
	return broken
}

func TestLinks(t *testing.T) {
	read := func(rel string) (string, bool) {
		path := filepath.Join(root, filepath.FromSlash(rel))
		fi, err := os.Stat(path)
		if err != nil {
			return "", false
		}
		if fi.IsDir() {
			return "", true
		}
		b, err := os.ReadFile(path)
		return string(b), err == nil
	}
	for _, doc := range manual(t) {
		for _, b := range brokenLinks(doc, read) {
			t.Error(b)
		}
	}
}

func TestBrokenLinks(t *testing.T) {
	files := map[string]string{
		"docs/a.md": "# A\n\n## What `make demo` does\n\n## Set-up: every minute from `deploy/`\n\n## Twice\n\n## Twice\n",
		"README.md": "",
	}
	read := func(rel string) (string, bool) { s, ok := files[rel]; return s, ok }
	for _, c := range []struct {
		name, text string
		want       int
	}{
		{"file", "see [a](a.md)", 0},
		{"anchor_with_code", "see [demo](a.md#what-make-demo-does)", 0},
		{"anchor_with_colon", "see [set-up](a.md#set-up-every-minute-from-deploy)", 0},
		{"repeated_heading", "[1](a.md#twice) [2](a.md#twice-1)", 0},
		{"own_anchor", "# B\n\n[b](#b)", 0},
		{"up_a_directory", "[readme](../README.md)", 0},
		{"web", "[site](https://plug.directory/missing.md)", 0},
		{"missing_file", "see [x](x.md)", 1},
		{"missing_anchor", "see [a](a.md#nowhere)", 1},
		{"stale_anchor_of_a_moved_section", "see [metrics](#metrics)", 1},
		{"in_code_span_not_a_link", "`[x](nowhere.md)`", 0},
		{"in_code_block_not_a_link", "```\n[x](nowhere.md)\n```\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			files["docs/b.md"] = c.text
			defer delete(files, "docs/b.md")
			if got := brokenLinks("docs/b.md", read); len(got) != c.want {
				t.Errorf("broken links %q, want %d", got, c.want)
			}
		})
	}
}

// outside matches what a reader of a clone cannot look up: the project's
// old pointers to material beside the repository, and issue numbers.
var outside = regexp.MustCompile(`(?i)\.\./shared\b|\bissues?\s+#?[0-9]+`)

// skipDirs are not the project's text: version control, and what builds,
// the demo and the examples write (ignored by git).
var skipDirs = map[string]bool{".git": true, "bin": true, "demo-out": true, "demo-fleet": true, "var": true, "sim-data": true}

// textFile reports whether a file is text a reader meets.
func textFile(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".md", ".sh", ".yml", ".yaml", ".json", ".jsonl", ".txt", ".tmpl", ".html", ".csv", ".conf", ".service", ".timer", ".toml":
		return true
	}
	switch name {
	case "Makefile", "crontab", "run", "tools", "tracked-files":
		return true
	}
	return false
}

// outsidePointers returns, for each line of r that points at something
// outside the repository, its number and what it says. A comment may break
// "issue" from its number: the last word of the line before is read with
// the line, without the comment's marks.
func outsidePointers(r io.Reader) ([]int, []string, error) {
	var lines []int
	var says []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	prev := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		joined := prev + " " + strings.TrimLeft(line, " \t/#*")
		if m := outside.FindString(joined); m != "" && (outside.MatchString(line) || !outside.MatchString(prev)) {
			lines, says = append(lines, n), append(says, m)
		}
		prev = lastWord(line)
	}
	return lines, says, sc.Err()
}

// lastWord is the last word of a line, what a comment may have broken off
// from the next.
func lastWord(line string) string {
	f := strings.Fields(line)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

func TestOutsidePointers(t *testing.T) {
	// The texts are cut where they would point outside themselves, so
	// that this file does not.
	for _, c := range []struct {
		name, text string
		want       []int
	}{
		{"issue_number", "// proves issue " + "19 point 3\n", []int{1}},
		{"issues", "see Issues " + "19 and 20\n", []int{1}},
		{"hash", "fixed in issue " + "#7\n", []int{1}},
		{"broken_by_a_comment", "// the certificate (issue\n// 19 point 1), as\n", []int{2}},
		{"broken_in_yaml", "  # as asked (issue\n  # 18)\n", []int{2}},
		{"beside_the_repository", "Rule ids are those of `../" + "shared/SPEC.md`\n", []int{1}},
		{"tissue", "a tissue 5 cm wide\n", nil},
		{"issue_without_number", "an issue of the list: 5 rows\n", nil},
		{"issue_then_prose", "// a known issue\n// 3 servers\n", []int{2}},
		{"shared_package", "planner/shared.go\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := outsidePointers(strings.NewReader(c.text))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("lines %v, want %v", got, c.want)
			}
		})
	}
}

// readTree returns the files under dir whose names want takes, by their
// slash-separated paths from dir, leaving out the directories of skipDirs.
func readTree(t *testing.T, dir string, want func(name string) bool) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !want(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// eachTextFile calls f with each text file of the repository a reader
// meets (textFile), in order of their paths from root.
func eachTextFile(t *testing.T, f func(rel string, text []byte)) {
	t.Helper()
	files := readTree(t, root, textFile)
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		f(rel, files[rel])
	}
}

// TestNoOutsidePointers: nothing in the repository points a reader at a
// file a clone does not have or an issue number they cannot look up; say
// what the thing is instead.
func TestNoOutsidePointers(t *testing.T) {
	eachTextFile(t, func(rel string, text []byte) {
		lines, says, err := outsidePointers(bytes.NewReader(text))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
		}
		for i, n := range lines {
			t.Errorf("%s:%d: %q: say what it is, not where it was discussed", rel, n, says[i])
		}
	})
}

// ruleDefined matches a rule's definition in docs/rules.md: its id in bold
// at the start of an item, or table O's heading.
var ruleDefined = regexp.MustCompile(`(?m)^- \*\*([NSPR][0-9]{1,2})\*\*|^## (O):`)

// ruleCited matches a rule cited in Go: "rule N9" in a comment or message,
// or a test name's "N9_" as its subtest's start (TestGuard/N9_...).
var ruleCited = regexp.MustCompile(`\brules? ([NSPR][0-9]{1,2})\b|"([NOSPR][0-9]{1,2})_[A-Za-z]`)

// TestRulesCited: every rule id the code and tests cite is one docs/rules.md
// defines, so a reader can look up what the id promises.
func TestRulesCited(t *testing.T) {
	defined := map[string]bool{}
	for _, m := range ruleDefined.FindAllStringSubmatch(readDoc(t, "docs/rules.md"), -1) {
		defined[m[1]+m[2]] = true
	}
	for _, id := range []string{"N1", "N11", "O", "S1", "S9", "P1", "P4", "R1", "R2"} {
		if !defined[id] {
			t.Fatalf("docs/rules.md does not define %s: is ruleDefined still its form?", id)
		}
	}
	cited := map[string]string{}
	eachTextFile(t, func(rel string, text []byte) {
		if filepath.Ext(rel) != ".go" {
			return
		}
		for _, m := range ruleCited.FindAllSubmatch(text, -1) {
			if id := string(m[1]) + string(m[2]); cited[id] == "" {
				cited[id] = rel
			}
		}
	})
	for id, path := range cited {
		if !defined[id] {
			t.Errorf("%s cites rule %s, which docs/rules.md does not define", path, id)
		}
	}
}
