package pause

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/pause/pausetest"
)

const listPath = "paused.txt"

// goodList pauses alpha by id and every server at one address.
const goodList = "# paused at the owner's request\nalpha\nhttps://shared.example/mcp  # two servers here\n"

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

var testServers = []data.Server{
	{ID: "alpha", Rank: 1, URL: "https://alpha.example/mcp"},
	{ID: "beta", Rank: 2, URL: "https://shared.example/mcp"},
	{ID: "gamma", Rank: 3, URL: "https://shared.example/mcp/"},
	{ID: "delta", Rank: 4, URL: "https://delta.example/mcp"},
}

var testSpec = Spec{Owner: fakeOwner, Repo: fakeRepo, Path: listPath, Ref: "main"}

// fetchAt runs one Fetch as one cron minute does: a new client, the clock at
// now. It fails the test on err.
func fetchAt(t *testing.T, f *pausetest.GitHub, dir string, now time.Time) (path string, warn error) {
	t.Helper()
	fe := &Fetcher{Client: fakeClient(t, f, "tok"), DataDir: dir, Now: func() time.Time { return now }}
	path, warn, err := fe.Fetch(context.Background(), testSpec)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return path, warn
}

// mustPausedIDs reads the list at path as the planner does and returns the
// ids of testServers it pauses.
func mustPausedIDs(t *testing.T, path string) string {
	t.Helper()
	list, err := lists.ReadPausedList(path)
	if err != nil {
		t.Fatalf("ReadPausedList(%s): %v", path, err)
	}
	paused, _ := list.Match(testServers)
	var ids []string
	for _, s := range testServers {
		if paused[s.ID] {
			ids = append(ids, s.ID)
		}
	}
	return strings.Join(ids, ",")
}

func TestFetch_R1_first_fetch_keeps_a_copy(t *testing.T) {
	f := newFake(t, map[string]string{listPath: goodList})
	dir := t.TempDir()
	path, warn := fetchAt(t, f, dir, t0)
	if warn != nil {
		t.Fatalf("warn = %v", warn)
	}
	if path != data.Dir(dir).PausedCopy() {
		t.Errorf("path = %s, want %s", path, data.Dir(dir).PausedCopy())
	}
	if got := mustPausedIDs(t, path); got != "alpha,beta,gamma" {
		t.Errorf("paused = %s, want alpha,beta,gamma", got)
	}
	reqs := f.TakeRequests()
	if len(reqs) != 1 || reqs[0].URI != "/repos/plugdir/directory/contents/paused.txt?ref=main" || reqs[0].IfNoneMatch != "" {
		t.Errorf("requests = %+v, want one unconditional GET of the contents", reqs)
	}
}

func TestFetch_ETag(t *testing.T) {
	f := newFake(t, map[string]string{listPath: goodList})
	dir := t.TempDir()
	fetchAt(t, f, dir, t0)
	first := f.TakeRequests()

	t.Run("unchanged_file_is_a_304_and_the_copy_stands", func(t *testing.T) {
		path, warn := fetchAt(t, f, dir, t0.Add(time.Minute))
		reqs := f.TakeRequests()
		if warn != nil || len(reqs) != 1 {
			t.Fatalf("warn = %v, %d requests", warn, len(reqs))
		}
		meta, _ := readCopy(path, filepath.Join(dir, "paused", lastGoodMeta))
		if reqs[0].IfNoneMatch == "" || reqs[0].IfNoneMatch != meta.ETag || first[0].IfNoneMatch != "" {
			t.Errorf("If-None-Match = %q, want the first answer's ETag %q", reqs[0].IfNoneMatch, meta.ETag)
		}
		if !meta.Fetched.Equal(t0) || !meta.Confirmed.Equal(t0) {
			t.Errorf("meta = %+v, want fetched and confirmed at t0 (not downloaded again, confirmation not yet due)", meta)
		}
		fetchAt(t, f, dir, t0.Add(confirmEvery))
		if meta, _ = readCopy(path, filepath.Join(dir, "paused", lastGoodMeta)); !meta.Confirmed.Equal(t0.Add(confirmEvery)) || !meta.Fetched.Equal(t0) {
			t.Errorf("meta = %+v, want confirmed again after %s", meta, confirmEvery)
		}
		if got := mustPausedIDs(t, path); got != "alpha,beta,gamma" {
			t.Errorf("paused = %s", got)
		}
	})
	t.Run("S8_changed_file_is_downloaded_at_the_next_fetch", func(t *testing.T) {
		f.Commit("main", listPath, goodList+"delta\n")
		path, warn := fetchAt(t, f, dir, t0.Add(2*time.Minute))
		if warn != nil {
			t.Fatal(warn)
		}
		if got := mustPausedIDs(t, path); got != "alpha,beta,gamma,delta" {
			t.Errorf("paused = %s, want delta added", got)
		}
	})
	t.Run("R2_removing_a_line_resumes_only_that_server", func(t *testing.T) {
		f.Commit("main", listPath, "alpha\ndelta\n")
		path, _ := fetchAt(t, f, dir, t0.Add(3*time.Minute))
		if got := mustPausedIDs(t, path); got != "alpha,delta" {
			t.Errorf("paused = %s, want alpha,delta", got)
		}
	})
	t.Run("another_source_is_asked_without_the_old_ETag", func(t *testing.T) {
		f.TakeRequests()
		fe := &Fetcher{Client: fakeClient(t, f, ""), DataDir: dir, Now: func() time.Time { return t0 }}
		other := testSpec
		other.Ref = ""
		if _, _, err := fe.Fetch(context.Background(), other); err != nil {
			t.Fatal(err)
		}
		if reqs := f.TakeRequests(); len(reqs) != 1 || reqs[0].IfNoneMatch != "" {
			t.Errorf("requests = %+v, want one without If-None-Match", reqs)
		}
	})
}

// failures are GitHub's ways of not giving the list, each answered by the
// fake in place of the file.
var failures = []struct {
	name      string
	answer    func(w http.ResponseWriter, r *http.Request)
	is        error  // what warn must match with errors.Is, if anything
	mention   string // what warn must say
	notBefore time.Duration
}{
	{
		name: "R2_5xx",
		answer: func(w http.ResponseWriter, r *http.Request) {
			pausetest.WriteJSON(w, 502, map[string]string{"message": "Server Error"})
		},
		mention: "502",
	},
	{
		name: "R2_rate_limit_403",
		answer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-RateLimit-Limit", "60")
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(t0.Add(10*time.Minute).Unix(), 10))
			pausetest.WriteJSON(w, 403, map[string]string{"message": "API rate limit exceeded"})
		},
		mention:   "rate limit",
		notBefore: 10 * time.Minute,
	},
	{
		name: "R2_rate_limit_429",
		answer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			pausetest.WriteJSON(w, 429, map[string]string{"message": "Too Many Requests"})
		},
		mention:   "429",
		notBefore: 2 * time.Minute,
	},
	{
		name: "R2_secondary_rate_limit",
		answer: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			pausetest.WriteJSON(w, 403, map[string]string{"message": "You have exceeded a secondary rate limit",
				"documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#secondary-rate-limits"})
		},
		mention:   "secondary rate limit",
		notBefore: 30 * time.Second,
	},
	{
		name: "R2_network",
		answer: func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		},
		mention: "EOF",
	},
	{
		name:    "R2_not_found",
		answer:  func(w http.ResponseWriter, r *http.Request) { pausetest.NotFound(w) },
		mention: "404",
	},
	{
		name: "R2_malformed_file_is_refused_whole",
		answer: func(w http.ResponseWriter, r *http.Request) {
			// alpha's line is mangled: keeping the good lines would resume it.
			pausetest.WriteJSON(w, 200, pausetest.ContentJSON(listPath, "alpha beta\nhttps://shared.example/mcp\nhttps://\n"))
		},
		is:      ErrMalformed,
		mention: "github:plugdir/directory/paused.txt@main:1: more than one entry on a line",
	},
	{
		name: "R2_truncated_answer",
		answer: func(w http.ResponseWriter, r *http.Request) {
			c := pausetest.ContentJSON(listPath, goodList)
			c["content"] = "IyBwYXVzZWQ=" // "# paused": the sha no longer matches
			pausetest.WriteJSON(w, 200, c)
		},
		is:      ErrBadContent,
		mention: "does not match its size",
	},
	{
		name: "R2_directory_in_place_of_the_file",
		answer: func(w http.ResponseWriter, r *http.Request) {
			pausetest.WriteJSON(w, 200, []any{pausetest.ContentJSON(listPath+"/x", "")})
		},
		is:      ErrBadContent,
		mention: "not a file",
	},
	{
		name: "R2_file_over_1MB",
		answer: func(w http.ResponseWriter, r *http.Request) {
			pausetest.WriteJSON(w, 200, map[string]any{"type": "file", "encoding": "none", "size": MaxListBytes + 1, "content": "", "sha": "x"})
		},
		is:      ErrBadContent,
		mention: "more than 1048576",
	},
	{
		name: "R2_not_text",
		answer: func(w http.ResponseWriter, r *http.Request) {
			pausetest.WriteJSON(w, 200, pausetest.ContentJSON(listPath, "alpha\n\xff\xfe\n"))
		},
		is:      ErrBadContent,
		mention: "not UTF-8",
	},
}

func TestFetch_failure_keeps_the_last_good_copy(t *testing.T) {
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, map[string]string{listPath: goodList})
			dir := t.TempDir()
			fetchAt(t, f, dir, t0)
			before, _ := os.ReadFile(data.Dir(dir).PausedCopy())
			f.Commit("main", listPath, "delta\n") // would resume alpha, beta and gamma if read
			f.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool { tc.answer(w, r); return true })

			path, warn := fetchAt(t, f, dir, t0.Add(time.Minute))
			if warn == nil {
				t.Fatal("warn = nil, want the failure surfaced")
			}
			if !strings.Contains(warn.Error(), tc.mention) || !strings.Contains(warn.Error(), "keeping the last good copy") {
				t.Errorf("warn = %v, want it to mention %q and the copy kept", warn, tc.mention)
			}
			if tc.is != nil && !errors.Is(warn, tc.is) {
				t.Errorf("warn = %v, want errors.Is %v", warn, tc.is)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Errorf("copy changed to %q", after)
			}
			if got := mustPausedIDs(t, path); got != "alpha,beta,gamma" {
				t.Errorf("paused = %s, want alpha,beta,gamma still paused", got)
			}

			// The next minute: a rate-limited fetch does not ask before the
			// reset; any other asks again and, the failure gone, catches up.
			f.SetIntercept(nil)
			f.TakeRequests()
			path, warn = fetchAt(t, f, dir, t0.Add(time.Minute+tc.notBefore/2))
			asked := len(f.TakeRequests())
			switch {
			case tc.notBefore > 0 && (asked != 0 || warn == nil || !strings.Contains(warn.Error(), "rate limited until")):
				t.Errorf("within the backoff: %d requests, warn %v; want none and a warning", asked, warn)
			case tc.notBefore == 0 && (asked != 1 || warn != nil || mustPausedIDs(t, path) != "delta"):
				t.Errorf("next minute: %d requests, warn %v, paused %s; want the new list", asked, warn, mustPausedIDs(t, path))
			}
			if tc.notBefore > 0 {
				path, warn = fetchAt(t, f, dir, t0.Add(time.Minute+tc.notBefore))
				if warn != nil || mustPausedIDs(t, path) != "delta" {
					t.Errorf("after the backoff: warn %v, paused %s; want the new list", warn, mustPausedIDs(t, path))
				}
			}
		})
	}
}

func TestFetch_R2_no_good_copy_is_an_error(t *testing.T) {
	f := newFake(t, map[string]string{listPath: "alpha beta\n"})
	dir := t.TempDir()
	fe := &Fetcher{Client: fakeClient(t, f, ""), DataDir: dir}
	path, _, err := fe.Fetch(context.Background(), testSpec)
	if !errors.Is(err, ErrNoGoodCopy) || !errors.Is(err, ErrMalformed) || path != "" {
		t.Errorf("Fetch = %q, %v; want ErrNoGoodCopy wrapping ErrMalformed", path, err)
	}
	if _, serr := os.Stat(data.Dir(dir).PausedCopy()); !os.IsNotExist(serr) {
		t.Errorf("a malformed list was kept: %v", serr)
	}
}

func TestFetch_S8_warns_when_the_copy_is_older_than_24h(t *testing.T) {
	f := newFake(t, map[string]string{listPath: goodList})
	dir := t.TempDir()
	fetchAt(t, f, dir, t0)
	f.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool { pausetest.WriteJSON(w, 503, nil); return true })
	_, warn := fetchAt(t, f, dir, t0.Add(23*time.Hour))
	if warn == nil || strings.Contains(warn.Error(), "rule S8") {
		t.Errorf("after 23 h: %v, want a warning without S8", warn)
	}
	_, warn = fetchAt(t, f, dir, t0.Add(25*time.Hour))
	if warn == nil || !strings.Contains(warn.Error(), "last confirmed 25h0m0s ago") || !strings.Contains(warn.Error(), "rule S8") {
		t.Errorf("after 25 h: %v, want the S8 promise named", warn)
	}
}

// TestToken_only_to_the_API_host proves the token goes to the API host and
// nowhere else: a redirect to another host (GitHub redirects renamed
// repositories) does not carry it.
func TestToken_only_to_the_API_host(t *testing.T) {
	var elsewhere []string
	other := pausetest.NewLoopbackServer(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		pausetest.WriteJSON(w, 200, pausetest.ContentJSON(listPath, goodList))
	}))
	f := newFake(t, map[string]string{listPath: goodList})
	f.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		return true
	})
	path, warn := fetchAt(t, f, t.TempDir(), t0)
	if warn != nil || mustPausedIDs(t, path) != "alpha,beta,gamma" {
		t.Fatalf("fetch through the redirect: warn %v", warn)
	}
	reqs := f.TakeRequests()
	if len(reqs) != 1 || reqs[0].Auth != "Bearer tok" {
		t.Errorf("API host saw %+v, want the token once", reqs)
	}
	if len(elsewhere) != 1 || elsewhere[0] != "" {
		t.Errorf("other host saw Authorization %q, want none", elsewhere)
	}
}

func TestNewClient(t *testing.T) {
	for _, tc := range []struct {
		api, token string
		wantErr    bool
	}{
		{"", "tok", false},
		{"https://ghe.example/api/v3", "tok", false},
		{"http://127.0.0.1:8080/", "tok", false},
		{"http://ghe.example/api/v3/", "tok", true}, // the token would travel in clear
		{"http://ghe.example/api/v3/", "", false},
		{"ftp://x/", "", true},
		{"::", "", true},
	} {
		t.Run(fmt.Sprintf("%s_%t", tc.api, tc.token != ""), func(t *testing.T) {
			c, err := NewClient(tc.api, tc.token, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %t", err, tc.wantErr)
			}
			if err == nil && !strings.HasSuffix(c.BaseURL.Path, "/") {
				t.Errorf("BaseURL %s without trailing slash", c.BaseURL)
			}
		})
	}
}
