package pause

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-github/v60/github"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
)

// DefaultBase is the branch a pause request targets when none is given.
const DefaultBase = "main"

// maxNoteLen bounds the note kept on the list's line; the pull request body
// carries it whole.
const maxNoteLen = 200

// ErrAlreadyListed is returned by OpenRequest when the paused list already
// names the server: a second pull request would change nothing.
var ErrAlreadyListed = errors.New("already on the paused list")

// ErrAlreadyRequested is returned by OpenRequest when an open pull request
// made by OpenRequest already asks to pause the same entry (the owner wrote
// and also used the form).
var ErrAlreadyRequested = errors.New("already requested by an open pull request")

// ErrNotListed is returned by OpenRequest when the request names no server
// of the ranked list it was given.
var ErrNotListed = errors.New("names no listed server")

// Request is an owner's request to stop the checks of one server.
type Request struct {
	Server  string        // a server id, or an address, which pauses every server listed at it
	Note    string        // who asked and how (report form, email); public, so no email addresses
	Base    string        // branch the pull request targets; "" means DefaultBase
	Servers []data.Server // the ranked list, to refuse an unknown server; nil skips that check
}

// Opened is the pull request OpenRequest opened.
type Opened struct {
	Number int
	URL    string // the pull request's page
	Branch string // the branch holding its one commit
	Line   string // the line it adds
}

// OpenRequest opens a pull request that adds req.Server to the paused list
// (rule R1): it makes a branch from the tip of the base branch, commits the
// list with one line added through the contents API (creating the file if
// the repository has none yet), and opens the pull request with a title and
// body that say what merging it does. It refuses, before writing anything, a
// server that does not make a valid line, one the list already names
// (ErrAlreadyListed), one an open pull request of its own already asks for
// (ErrAlreadyRequested) and, when req.Servers is given, one that names no
// listed server (ErrNotListed). A failure after the branch was made names the
// branch, which is left for the operator to delete.
func (r *Repo) OpenRequest(ctx context.Context, req Request) (Opened, error) {
	base := req.Base
	if base == "" {
		base = DefaultBase
	}
	entry, err := requestEntry(r.Path, req.Server)
	if err != nil {
		return Opened{}, fmt.Errorf("open pause request: %w", err)
	}
	now := r.now().UTC()
	line := entry.Value + "  # " + now.Format("2006-01-02")
	if note := oneLine(req.Note, maxNoteLen); note != "" {
		line += " " + note
	}

	ref, _, err := r.Client.Git.GetRef(ctx, r.Owner, r.Name, "heads/"+base)
	if err != nil {
		return Opened{}, fmt.Errorf("open pause request: read branch %s: %w", base, err)
	}
	baseSHA := ref.GetObject().GetSHA()
	cur, _, err := getFile(ctx, r.Client, r.Owner, r.Name, r.Path, baseSHA, "")
	if err != nil && !isNotFound(err) {
		return Opened{}, fmt.Errorf("open pause request: read %s at %s: %w", r.Path, base, err)
	}
	if err := refuseListed(r.Path, cur.Content, entry, req.Servers); err != nil {
		return Opened{}, fmt.Errorf("open pause request: %w", err)
	}
	prefix := "pause/" + slug(entry.Value) + "-"
	if err := r.refuseRequested(ctx, base, prefix); err != nil {
		return Opened{}, fmt.Errorf("open pause request: %w", err)
	}

	content := bytes.Clone(cur.Content)
	if len(content) > 0 && content[len(content)-1] != '\n' {
		content = append(content, '\n')
	}
	content = append(content, line+"\n"...)

	branch := prefix + now.Format(branchTime)
	_, _, err = r.Client.Git.CreateRef(ctx, r.Owner, r.Name, &github.Reference{
		Ref:    github.String("refs/heads/" + branch),
		Object: &github.GitObject{SHA: github.String(baseSHA)},
	})
	if err != nil {
		return Opened{}, fmt.Errorf("open pause request: create branch %s: %w", branch, err)
	}
	title := "Pause checks of " + entry.Value
	opts := &github.RepositoryContentFileOptions{
		Message: github.String(strings.TrimSpace(title + "\n\n" + strings.TrimSpace(req.Note))),
		Content: content,
		Branch:  github.String(branch),
	}
	if cur.SHA != "" {
		opts.SHA = github.String(cur.SHA)
	}
	if _, _, err := r.Client.Repositories.UpdateFile(ctx, r.Owner, r.Name, r.Path, opts); err != nil {
		return Opened{}, fmt.Errorf("open pause request: commit %s on branch %s: %w", r.Path, branch, err)
	}
	pr, _, err := r.Client.PullRequests.Create(ctx, r.Owner, r.Name, &github.NewPullRequest{
		Title: github.String(title),
		Head:  github.String(branch),
		Base:  github.String(base),
		Body:  github.String(requestBody(r.Path, entry.Value, req.Note)),
	})
	if err != nil {
		return Opened{}, fmt.Errorf("open pause request: pull request from branch %s: %w", branch, err)
	}
	r.logger().Info("pause request opened", "number", pr.GetNumber(), "server", entry.Value, "branch", branch)
	return Opened{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Branch: branch, Line: line}, nil
}

// refuseRequested returns ErrAlreadyRequested when an open pull request
// into base comes from a branch OpenRequest made for the same entry.
func (r *Repo) refuseRequested(ctx context.Context, base, prefix string) error {
	opts := &github.PullRequestListOptions{State: "open", Base: base, ListOptions: github.ListOptions{PerPage: 100}}
	for {
		prs, resp, err := r.Client.PullRequests.List(ctx, r.Owner, r.Name, opts)
		if err != nil {
			return fmt.Errorf("list open pull requests: %w", err)
		}
		for _, pr := range prs {
			if isRequestBranch(pr.GetHead().GetRef(), prefix) {
				return fmt.Errorf("#%d from %s: %w", pr.GetNumber(), pr.GetHead().GetRef(), ErrAlreadyRequested)
			}
		}
		if resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
}

// branchTime ends the name of a request's branch.
const branchTime = "20060102-150405"

// isRequestBranch reports whether ref is prefix and a branchTime: the
// branch of a request for the same entry, and not one for an entry whose
// slug merely starts like it ("delta" and "delta-2").
func isRequestBranch(ref, prefix string) bool {
	rest, ok := strings.CutPrefix(ref, prefix)
	if !ok {
		return false
	}
	_, err := time.Parse(branchTime, rest)
	return err == nil
}

// requestEntry checks that server makes exactly one valid line of the list,
// by the list's own parser.
func requestEntry(path, server string) (lists.PausedEntry, error) {
	server = strings.TrimSpace(server)
	if server == "" || strings.ContainsAny(server, "#\r\n") {
		return lists.PausedEntry{}, fmt.Errorf("server %q cannot be a line of %s", server, path)
	}
	list, bad, _ := lists.ParsePausedList(path, strings.NewReader(server))
	if len(bad) > 0 {
		return lists.PausedEntry{}, bad[0]
	}
	return list.Entries[0], nil
}

// refuseListed returns ErrAlreadyListed when content already names entry,
// directly or, given the ranked list, through another line naming the same
// servers; and ErrNotListed when the ranked list is given and entry names
// none of its servers.
func refuseListed(path string, content []byte, entry lists.PausedEntry, servers []data.Server) error {
	list, _, _ := lists.ParsePausedList(path, bytes.NewReader(content))
	for _, e := range list.Entries {
		if e.Value == entry.Value || (e.IsAddress() && entry.IsAddress() && lists.NormalizeAddress(e.Value) == lists.NormalizeAddress(entry.Value)) {
			return fmt.Errorf("%s:%d: %q %w", path, e.Line, entry.Value, ErrAlreadyListed)
		}
	}
	if servers == nil {
		return nil
	}
	named, _ := lists.PausedList{Entries: []lists.PausedEntry{entry}}.Match(servers)
	if len(named) == 0 {
		return fmt.Errorf("%q %w", entry.Value, ErrNotListed)
	}
	paused, _ := list.Match(servers)
	for id := range named {
		if !paused[id] {
			return nil
		}
	}
	return fmt.Errorf("%s: every server %q names is %w by another line", path, entry.Value, ErrAlreadyListed)
}

// requestBody is the pull request's description: what merging it does, for
// the reviewer and for the owner who may be sent its link.
func requestBody(path, entry, note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Adds `%s` to `%s`, the paused list of plug.directory's checks.\n\n", entry, path)
	if note = strings.TrimSpace(note); note != "" {
		fmt.Fprintf(&b, "Request: %s\n\n", note)
	}
	fmt.Fprintf(&b, "Once this is merged, the next plan (run every minute) leaves the server out, "+
		"and its page says %q. The checks page promises this within %d hours of the request.\n\n",
		data.Paused.Label(), int(data.PauseWithin.Hours()))
	fmt.Fprintf(&b, "To resume the checks later, remove the line in another pull request.\n")
	return b.String()
}

// oneLine folds s into one line of at most max runes, so a note cannot add
// lines to the list.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// slug makes a branch-name fragment of an id or address.
func slug(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(s), "https://"), "http://")
	var b strings.Builder
	dash, dot := false, false
	for _, c := range s {
		if c < unicode.MaxASCII && (unicode.IsLetter(c) || unicode.IsDigit(c) || c == '.' || c == '_') {
			if c == '.' && dot {
				continue // git refuses ".." in a branch name
			}
			b.WriteRune(c)
			dash, dot = false, c == '.'
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash, dot = true, false
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.Trim(b.String(), "-.")
}
