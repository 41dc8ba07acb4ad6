package pause

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"
)

// MaxListBytes is the largest paused list read: the contents API only gives
// files up to 1 MB inline, and a list of that size would be a mistake.
const MaxListBytes = 1 << 20

// ErrBadContent marks a file the API returned that is not a usable paused
// list: not a regular file, too large, not text, or not matching its own git
// blob sha (a truncated or altered answer).
var ErrBadContent = errors.New("bad content")

// fileVersion is one version of a file read through the contents API.
type fileVersion struct {
	Content     []byte
	SHA         string // git blob sha of Content
	ETag        string // the answer's ETag, for a later If-None-Match
	NotModified bool   // 304: the caller's ETag still holds; Content is empty
}

// getFile reads path at ref ("" for the default branch) from owner/repo. With
// etag not "", it asks conditionally (If-None-Match) and a 304 answer is
// NotModified, which costs no rate limit when authenticated. The content is
// checked against its git blob sha, so a truncated answer is ErrBadContent
// rather than a shorter list.
func getFile(ctx context.Context, c *github.Client, owner, repo, path, ref, etag string) (fileVersion, *github.Response, error) {
	u := fmt.Sprintf("repos/%s/%s/contents/%s", url.PathEscape(owner), url.PathEscape(repo), (&url.URL{Path: path}).EscapedPath())
	if ref != "" {
		u += "?ref=" + url.QueryEscape(ref)
	}
	req, err := c.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return fileVersion{}, nil, err
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	var raw json.RawMessage
	resp, err := c.Do(ctx, req, &raw)
	if resp != nil && resp.StatusCode == http.StatusNotModified && etag != "" {
		return fileVersion{NotModified: true, ETag: etag}, resp, nil
	}
	if err != nil {
		return fileVersion{}, resp, err
	}
	var rc github.RepositoryContent
	if err := json.Unmarshal(raw, &rc); err != nil {
		return fileVersion{}, resp, fmt.Errorf("%w: %s is not a file", ErrBadContent, path)
	}
	if rc.GetType() != "file" {
		return fileVersion{}, resp, fmt.Errorf("%w: %s is a %s, not a file", ErrBadContent, path, rc.GetType())
	}
	if rc.GetSize() > MaxListBytes {
		return fileVersion{}, resp, fmt.Errorf("%w: %s has %d bytes, more than %d", ErrBadContent, path, rc.GetSize(), MaxListBytes)
	}
	text, err := rc.GetContent()
	if err != nil {
		return fileVersion{}, resp, fmt.Errorf("%w: %s: %v", ErrBadContent, path, err)
	}
	content := []byte(text)
	if len(content) != rc.GetSize() || gitBlobSHA(content) != rc.GetSHA() {
		return fileVersion{}, resp, fmt.Errorf("%w: %s: content does not match its size %d and sha %s", ErrBadContent, path, rc.GetSize(), rc.GetSHA())
	}
	if !utf8.Valid(content) {
		return fileVersion{}, resp, fmt.Errorf("%w: %s is not UTF-8 text", ErrBadContent, path)
	}
	return fileVersion{Content: content, SHA: rc.GetSHA(), ETag: resp.Header.Get("ETag")}, resp, nil
}

// gitBlobSHA returns the id git gives a file with this content.
func gitBlobSHA(content []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// isNotFound reports whether err is GitHub's 404.
func isNotFound(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound
}

func isBadContent(err error) bool { return errors.Is(err, ErrBadContent) }
