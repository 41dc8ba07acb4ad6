package pausetest

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// GitHub is a small in-memory GitHub REST API for one repository: the
// endpoints pause uses (contents, refs, pulls, compare) on commits that are
// whole snapshots of the files. It never talks to the real GitHub.
type GitHub struct {
	t     testing.TB
	srv   *httptest.Server
	owner string
	repo  string

	mu      sync.Mutex
	commits map[string]fakeCommit // sha -> commit
	refs    map[string]string     // branch -> commit sha
	pulls   map[int]fakePull
	answers map[string]fakeAnswer // commit:path -> contents answer, so a 304 costs the fake little
	// intercept, when set, sees each request first and answers it itself by
	// returning true: failures, redirects, odd contents.
	intercept func(w http.ResponseWriter, r *http.Request) bool
	requests  []Request
}

type fakeCommit struct {
	parent string
	files  map[string]string // path -> content
}

type fakeAnswer struct {
	body []byte
	etag string
}

type fakePull struct {
	base, head       string // branches
	baseSHA, headSHA string
	merged           bool
}

// Request is one request as the fake saw it.
type Request struct {
	Method, URI string
	Auth        string
	IfNoneMatch string
	Body        string
}

// New starts the fake for owner/repo on a loopback address, with a main
// branch whose one commit holds files. It is closed when the test ends.
func New(t testing.TB, owner, repo string, files map[string]string) *GitHub {
	t.Helper()
	f := &GitHub{
		t: t, owner: owner, repo: repo,
		commits: map[string]fakeCommit{}, refs: map[string]string{}, pulls: map[int]fakePull{},
		answers: map[string]fakeAnswer{},
	}
	f.refs["main"] = f.addCommit("", files)
	mux := http.NewServeMux()
	prefix := "/repos/" + f.owner + "/" + f.repo
	mux.HandleFunc("GET "+prefix+"/contents/{path...}", f.getContents)
	mux.HandleFunc("PUT "+prefix+"/contents/{path...}", f.putContents)
	mux.HandleFunc("GET "+prefix+"/git/ref/heads/{branch...}", f.getRef)
	mux.HandleFunc("POST "+prefix+"/git/refs", f.createRef)
	mux.HandleFunc("POST "+prefix+"/pulls", f.createPull)
	mux.HandleFunc("GET "+prefix+"/pulls", f.listPulls)
	mux.HandleFunc("GET "+prefix+"/pulls/{n}", f.getPull)
	mux.HandleFunc("GET "+prefix+"/pulls/{n}/files", f.pullFiles)
	mux.HandleFunc("GET "+prefix+"/compare/{basehead}", f.compare)
	f.srv = NewLoopbackServer(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		f.mu.Lock()
		f.requests = append(f.requests, Request{
			Method: r.Method, URI: r.URL.RequestURI(), Auth: r.Header.Get("Authorization"),
			IfNoneMatch: r.Header.Get("If-None-Match"), Body: string(body),
		})
		icpt := f.intercept
		f.mu.Unlock()
		if icpt != nil && icpt(w, r) {
			return
		}
		mux.ServeHTTP(w, r)
	}))
	return f
}

// NewLoopbackServer starts an httptest server on ip (a 127/8 address).
func NewLoopbackServer(t testing.TB, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// URL returns the fake's API base URL, with a trailing slash.
func (f *GitHub) URL() string { return f.srv.URL + "/" }

// SetIntercept makes fn see each request first; fn answers it itself by
// returning true (a failure, a redirect, odd contents). nil removes it.
func (f *GitHub) SetIntercept(fn func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intercept = fn
}

// TakeRequests returns the requests seen since the last call.
func (f *GitHub) TakeRequests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

func (f *GitHub) addCommit(parent string, files map[string]string) string {
	h := sha1.New()
	fmt.Fprintf(h, "parent %s\n", parent)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "%s %s\n", p, blobSHA([]byte(files[p])))
	}
	sha := hex.EncodeToString(h.Sum(nil))
	f.commits[sha] = fakeCommit{parent: parent, files: files}
	return sha
}

// Commit puts content at path on branch (made from main when new) and
// returns the new commit.
func (f *GitHub) Commit(branch, path, content string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commitLocked(branch, map[string]*string{path: &content})
}

// CommitFiles changes several files at once; a nil content removes a file.
func (f *GitHub) CommitFiles(branch string, changes map[string]*string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commitLocked(branch, changes)
}

func (f *GitHub) commitLocked(branch string, changes map[string]*string) string {
	parent, ok := f.refs[branch]
	if !ok {
		parent = f.refs["main"]
	}
	files := map[string]string{}
	for p, c := range f.commits[parent].files {
		files[p] = c
	}
	for p, c := range changes {
		if c == nil {
			delete(files, p)
		} else {
			files[p] = *c
		}
	}
	sha := f.addCommit(parent, files)
	f.refs[branch] = sha
	return sha
}

// OpenPull opens a pull request from head into base and returns its number.
func (f *GitHub) OpenPull(base, head string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.pulls) + 1
	f.pulls[n] = fakePull{base: base, head: head, baseSHA: f.refs[base], headSHA: f.refs[head]}
	return n
}

// Merge merges pull request n into its base as GitHub's merge button does
// for changes that do not conflict: the files the pull request changed since
// the merge base take their head version on top of the base branch.
func (f *GitHub) Merge(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pulls[n]
	head := f.refs[p.head]
	changes := map[string]*string{}
	for _, c := range f.changedFiles(f.mergeBase(f.refs[p.base], head), head) {
		path := c["filename"].(string)
		if content, ok := f.commits[head].files[path]; ok {
			changes[path] = &content
		} else {
			changes[path] = nil
		}
	}
	f.commitLocked(p.base, changes)
	p.merged = true
	f.pulls[n] = p
}

// File returns path on branch, and whether it exists.
func (f *GitHub) File(branch, path string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.commits[f.refs[branch]].files[path]
	return c, ok
}

// resolve turns a branch name or commit sha ("" for main) into a commit.
func (f *GitHub) resolve(ref string) (string, bool) {
	if ref == "" {
		ref = "main"
	}
	if sha, ok := f.refs[ref]; ok {
		return sha, true
	}
	_, ok := f.commits[ref]
	return ref, ok
}

// RenderRequests lists requests as the golden files keep them: method, URI
// and the JSON body indented.
func RenderRequests(reqs []Request) []byte {
	var b bytes.Buffer
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.URI)
		if r.Body != "" {
			var ind bytes.Buffer
			if json.Indent(&ind, []byte(r.Body), "", "  ") != nil {
				ind.Reset()
				ind.WriteString(r.Body)
			}
			b.Write(bytes.TrimSpace(ind.Bytes()))
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// blobSHA returns the id git gives a file with this content. The fake
// computes it on its own, so a mistake in the code under test cannot
// agree with it.
func blobSHA(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
