package pausetest

// The REST endpoints the fake answers, each as GitHub's API does for the
// calls go-github makes: contents, refs, pulls, their files and compare.

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

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
