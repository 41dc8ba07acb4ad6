package pausetest

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
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

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// NotFound answers GitHub's 404.
func NotFound(w http.ResponseWriter) {
	WriteJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

// ContentJSON is the contents API's answer for one file, with the content
// in base64 broken into lines as GitHub does.
func ContentJSON(path, content string) map[string]any {
	enc := base64.StdEncoding.EncodeToString([]byte(content))
	var lines []string
	for len(enc) > 60 {
		lines = append(lines, enc[:60])
		enc = enc[60:]
	}
	lines = append(lines, enc)
	name := path[strings.LastIndexByte(path, '/')+1:]
	return map[string]any{
		"type": "file", "encoding": "base64", "size": len(content), "name": name, "path": path,
		"content": strings.Join(lines, "\n") + "\n", "sha": blobSHA([]byte(content)),
	}
}

func (f *GitHub) getContents(w http.ResponseWriter, r *http.Request) {
	path := r.PathValue("path")
	f.mu.Lock()
	sha, ok := f.resolve(r.URL.Query().Get("ref"))
	content, exists := f.commits[sha].files[path]
	cached, hit := f.answers[sha+":"+path]
	f.mu.Unlock()
	if !ok || !exists {
		NotFound(w)
		return
	}
	if !hit {
		cached.body, _ = json.Marshal(ContentJSON(path, content))
		sum := sha1.Sum(cached.body)
		cached.etag = `W/"` + hex.EncodeToString(sum[:]) + `"`
		f.mu.Lock()
		f.answers[sha+":"+path] = cached
		f.mu.Unlock()
	}
	body, etag := cached.body, cached.etag
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(body)
}

func (f *GitHub) putContents(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Message, Branch, SHA string
		Content              []byte
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	path := r.PathValue("path")
	f.mu.Lock()
	defer f.mu.Unlock()
	parent, ok := f.refs[in.Branch]
	if !ok {
		NotFound(w)
		return
	}
	cur, exists := f.commits[parent].files[path]
	if exists && in.SHA != blobSHA([]byte(cur)) || !exists && in.SHA != "" {
		WriteJSON(w, http.StatusConflict, map[string]string{"message": "sha does not match"})
		return
	}
	content := string(in.Content)
	sha := f.commitLocked(in.Branch, map[string]*string{path: &content})
	WriteJSON(w, http.StatusOK, map[string]any{"content": ContentJSON(path, content), "commit": map[string]string{"sha": sha}})
}

func (f *GitHub) getRef(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	sha, ok := f.refs[r.PathValue("branch")]
	f.mu.Unlock()
	if !ok {
		NotFound(w)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ref": "refs/heads/" + r.PathValue("branch"), "object": map[string]string{"type": "commit", "sha": sha}})
}

func (f *GitHub) createRef(w http.ResponseWriter, r *http.Request) {
	var in struct{ Ref, SHA string }
	json.NewDecoder(r.Body).Decode(&in)
	branch, ok := strings.CutPrefix(in.Ref, "refs/heads/")
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, exists := f.refs[branch]; exists || !ok {
		WriteJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Reference already exists"})
		return
	}
	if _, ok := f.commits[in.SHA]; !ok {
		WriteJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Object does not exist"})
		return
	}
	f.refs[branch] = in.SHA
	WriteJSON(w, http.StatusCreated, map[string]any{"ref": in.Ref, "object": map[string]string{"type": "commit", "sha": in.SHA}})
}

func (f *GitHub) createPull(w http.ResponseWriter, r *http.Request) {
	var in struct{ Title, Head, Base, Body string }
	json.NewDecoder(r.Body).Decode(&in)
	f.mu.Lock()
	_, okh := f.refs[in.Head]
	_, okb := f.refs[in.Base]
	f.mu.Unlock()
	if !okh || !okb {
		WriteJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		return
	}
	n := f.OpenPull(in.Base, in.Head)
	WriteJSON(w, http.StatusCreated, map[string]any{
		"number": n, "state": "open", "title": in.Title,
		"html_url": fmt.Sprintf("https://github.example/%s/%s/pull/%d", f.owner, f.repo, n),
	})
}

func (f *GitHub) listPulls(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []map[string]any{}
	for n := 1; n <= len(f.pulls); n++ {
		p := f.pulls[n]
		if p.merged || (r.URL.Query().Get("base") != "" && r.URL.Query().Get("base") != p.base) {
			continue
		}
		out = append(out, map[string]any{"number": n, "state": "open", "head": map[string]string{"ref": p.head}, "base": map[string]string{"ref": p.base}})
	}
	WriteJSON(w, http.StatusOK, out)
}

func (f *GitHub) pull(w http.ResponseWriter, r *http.Request) (int, fakePull, bool) {
	n, _ := strconv.Atoi(r.PathValue("n"))
	f.mu.Lock()
	p, ok := f.pulls[n]
	f.mu.Unlock()
	if !ok {
		NotFound(w)
	}
	return n, p, ok
}

func (f *GitHub) getPull(w http.ResponseWriter, r *http.Request) {
	n, p, ok := f.pull(w, r)
	if !ok {
		return
	}
	repo := map[string]any{"name": f.repo, "owner": map[string]string{"login": f.owner}}
	WriteJSON(w, http.StatusOK, map[string]any{
		"number": n, "state": "open",
		"base": map[string]any{"ref": p.base, "sha": p.baseSHA, "repo": repo},
		"head": map[string]any{"ref": p.head, "sha": p.headSHA, "repo": repo},
	})
}

// mergeBase is the newest ancestor of head that is also one of base.
func (f *GitHub) mergeBase(base, head string) string {
	seen := map[string]bool{}
	for c := base; c != ""; c = f.commits[c].parent {
		seen[c] = true
	}
	for c := head; c != ""; c = f.commits[c].parent {
		if seen[c] {
			return c
		}
	}
	return ""
}

// changedFiles lists what differs between two commits, as the API does.
func (f *GitHub) changedFiles(from, to string) []map[string]any {
	a, b := f.commits[from].files, f.commits[to].files
	var out []map[string]any
	for p, c := range b {
		if old, ok := a[p]; !ok {
			out = append(out, map[string]any{"filename": p, "status": "added"})
		} else if old != c {
			out = append(out, map[string]any{"filename": p, "status": "modified"})
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			out = append(out, map[string]any{"filename": p, "status": "removed"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["filename"].(string) < out[j]["filename"].(string) })
	return out
}

func (f *GitHub) pullFiles(w http.ResponseWriter, r *http.Request) {
	_, p, ok := f.pull(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	files := f.changedFiles(f.mergeBase(p.baseSHA, p.headSHA), p.headSHA)
	f.mu.Unlock()
	WriteJSON(w, http.StatusOK, files)
}

func (f *GitHub) compare(w http.ResponseWriter, r *http.Request) {
	base, head, ok := strings.Cut(r.PathValue("basehead"), "...")
	f.mu.Lock()
	defer f.mu.Unlock()
	_, okb := f.commits[base]
	_, okh := f.commits[head]
	if !ok || !okb || !okh {
		NotFound(w)
		return
	}
	mb := f.mergeBase(base, head)
	WriteJSON(w, http.StatusOK, map[string]any{
		"merge_base_commit": map[string]string{"sha": mb},
		"files":             f.changedFiles(mb, head),
	})
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
