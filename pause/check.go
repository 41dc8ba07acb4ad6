package pause

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-github/v60/github"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
)

// LineChange is one line a pull request adds to or removes from the list.
type LineChange struct {
	Line    int      // 1-based, in the head version for an added line, in the base version for a removed one
	Text    string   // the line as written
	Servers []string // ids of the listed servers its entry names, sorted; none for a comment or blank line
}

// Verdict is what CheckPullRequest found.
type Verdict struct {
	Number   int
	Path     string       // the paused list
	Added    []LineChange // in line order
	Removed  []LineChange // in line order
	Problems []string     // why the change is not acceptable; empty when it is
}

// OK reports whether the pull request is an acceptable change of the list.
func (v Verdict) OK() bool { return len(v.Problems) == 0 }

// String renders the verdict as cmd/pause prints it for the CI log.
func (v Verdict) String() string {
	var b strings.Builder
	word := "acceptable"
	if !v.OK() {
		word = "not acceptable"
	}
	fmt.Fprintf(&b, "pull request #%d changing %s: %s\n", v.Number, v.Path, word)
	for _, p := range v.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	for _, c := range v.Added {
		fmt.Fprintf(&b, "+ %s:%d: %s%s\n", v.Path, c.Line, c.Text, effect("pauses", c.Servers))
	}
	for _, c := range v.Removed {
		fmt.Fprintf(&b, "- %s:%d (base): %s%s\n", v.Path, c.Line, c.Text, effect("resumes", c.Servers))
	}
	return b.String()
}

func effect(verb string, ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return "  (" + verb + " " + strings.Join(ids, ", ") + ")"
}

// CheckPullRequest decides whether pull request number is an acceptable
// change of the paused list, for the directory repository's CI: it may change
// only the list's file (no other file, no rename, no deletion), the file must
// stay a regular text file in which every line parses (a malformed list is
// refused whole by Fetch, so merging one would stop every update, rule R2),
// and every entry it adds must name a server of servers, by id or address.
// Removing lines, which resumes checks, is always acceptable. The lines are
// compared between the merge base and the head, as the pull request's own
// diff is, and as multisets, so moving a line is no change. It returns an
// error only when GitHub cannot be read; a bad change is a Verdict with
// Problems.
func (r *Repo) CheckPullRequest(ctx context.Context, number int, servers []data.Server) (Verdict, error) {
	v := Verdict{Number: number, Path: r.Path}
	pr, _, err := r.Client.PullRequests.Get(ctx, r.Owner, r.Name, number)
	if err != nil {
		return v, fmt.Errorf("check pull request %d: %w", number, err)
	}
	touched := false
	opts := &github.ListOptions{PerPage: 100}
	for {
		files, resp, err := r.Client.PullRequests.ListFiles(ctx, r.Owner, r.Name, number, opts)
		if err != nil {
			return v, fmt.Errorf("check pull request %d: list files: %w", number, err)
		}
		for _, f := range files {
			switch {
			case f.GetFilename() != r.Path:
				v.Problems = append(v.Problems, fmt.Sprintf("changes %s; a pause request may change only %s", f.GetFilename(), r.Path))
			case f.GetStatus() != "modified" && f.GetStatus() != "added":
				v.Problems = append(v.Problems, fmt.Sprintf("%s is %s; it may only gain or lose lines", r.Path, f.GetStatus()))
			default:
				touched = true
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if !touched {
		if len(v.Problems) == 0 {
			v.Problems = append(v.Problems, fmt.Sprintf("does not change %s", r.Path))
		}
		return v, nil
	}

	cmp, _, err := r.Client.Repositories.CompareCommits(ctx, r.Owner, r.Name, pr.GetBase().GetSHA(), pr.GetHead().GetSHA(), &github.ListOptions{PerPage: 1})
	if err != nil {
		return v, fmt.Errorf("check pull request %d: find merge base: %w", number, err)
	}
	mergeBase := cmp.GetMergeBaseCommit().GetSHA()
	before, _, err := getFile(ctx, r.Client, r.Owner, r.Name, r.Path, mergeBase, "")
	if err != nil && !isNotFound(err) {
		return v, fmt.Errorf("check pull request %d: read %s at %s: %w", number, r.Path, mergeBase, err)
	}
	headOwner, headName := r.Owner, r.Name
	if hr := pr.GetHead().GetRepo(); hr != nil && hr.GetName() != "" { // a fork
		headOwner, headName = hr.GetOwner().GetLogin(), hr.GetName()
	}
	after, _, err := getFile(ctx, r.Client, headOwner, headName, r.Path, pr.GetHead().GetSHA(), "")
	if err != nil {
		if isBadContent(err) {
			v.Problems = append(v.Problems, err.Error())
			return v, nil
		}
		return v, fmt.Errorf("check pull request %d: read %s at %s: %w", number, r.Path, pr.GetHead().GetSHA(), err)
	}
	v.judge(before.Content, after.Content, servers)
	return v, nil
}

// judge fills v from the two versions of the list.
func (v *Verdict) judge(before, after []byte, servers []data.Server) {
	headList, bad, _ := lists.ParsePausedList(v.Path, bytes.NewReader(after))
	for _, e := range bad {
		v.Problems = append(v.Problems, e.Error())
	}
	baseList, _, _ := lists.ParsePausedList(v.Path, bytes.NewReader(before))
	added, removed := lineDiff(before, after)

	entryAt := func(l lists.PausedList, line int) (lists.PausedEntry, bool) {
		for _, e := range l.Entries {
			if e.Line == line {
				return e, true
			}
		}
		return lists.PausedEntry{}, false
	}
	names := func(e lists.PausedEntry) []string {
		m, _ := lists.PausedList{Entries: []lists.PausedEntry{e}}.Match(servers)
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return ids
	}
	for _, c := range added {
		if e, ok := entryAt(headList, c.Line); ok {
			c.Servers = names(e)
			if len(c.Servers) == 0 {
				v.Problems = append(v.Problems, fmt.Sprintf("%s:%d: %q %s", v.Path, c.Line, e.Value, ErrNotListed))
			}
		}
		v.Added = append(v.Added, c)
	}
	for _, c := range removed {
		if e, ok := entryAt(baseList, c.Line); ok {
			c.Servers = names(e)
		}
		v.Removed = append(v.Removed, c)
	}
}

// lineDiff returns the lines of after that before lacks and the lines of
// before that after lacks, counted as multisets, each with its line number.
func lineDiff(before, after []byte) (added, removed []LineChange) {
	count := func(lines []string) map[string]int {
		m := make(map[string]int, len(lines))
		for _, l := range lines {
			m[l]++
		}
		return m
	}
	bl, al := splitLines(before), splitLines(after)
	inBefore, inAfter := count(bl), count(al)
	for i, l := range al {
		if inBefore[l] > 0 {
			inBefore[l]--
			continue
		}
		added = append(added, LineChange{Line: i + 1, Text: l})
	}
	for i, l := range bl {
		if inAfter[l] > 0 {
			inAfter[l]--
			continue
		}
		removed = append(removed, LineChange{Line: i + 1, Text: l})
	}
	return added, removed
}

// splitLines splits as the list's parser reads lines: a last line without a
// newline still counts, a trailing newline adds none.
func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
