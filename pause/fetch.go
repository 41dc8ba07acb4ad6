package pause

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-github/v60/github"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/internal/durable"
)

// ErrNoGoodCopy is returned by Fetch when the list cannot be read from GitHub
// and no earlier good copy is kept: the caller has no paused list to plan
// with.
var ErrNoGoodCopy = errors.New("no good copy of the paused list")

// ErrMalformed marks a fetched list with bad lines. Such a version is refused
// as a whole and the last good copy stands: keeping only its good lines could
// resume a server whose line was mangled (rule R2), and the directory's CI
// (CheckPullRequest) should never have let it in.
var ErrMalformed = errors.New("malformed paused list")

// maxBackoff caps how long a rate-limit answer can stop Fetch from asking,
// so that a wrong reset header cannot delay pause requests for days (S8).
const maxBackoff = time.Hour

// confirmEvery is how often an unchanged list's confirmation time is
// written: not every minute, which would fsync for nothing, yet often
// enough for the 24-hour staleness warning of rule S8.
const confirmEvery = 10 * time.Minute

// lastGoodMeta names the metadata of the last good copy, beside it.
const lastGoodMeta = "last-good.json"

// copyMeta describes the last good copy; it is written after the copy, so a
// crash in between leaves an ETag that no longer matches, which only costs
// one full download.
type copyMeta struct {
	Source    string    `json:"source"`                // Spec.String() the copy came from
	ETag      string    `json:"etag"`                  // ETag of the answer that gave it
	SHA       string    `json:"sha"`                   // git blob sha of the copy
	Fetched   time.Time `json:"fetched"`               // when the copy was downloaded
	Confirmed time.Time `json:"confirmed"`             // last time GitHub said it is current (200 or 304)
	NotBefore time.Time `json:"not_before,omitzero"`   // rate limited: ask no sooner
	Entries   int       `json:"entries"`               // entries in the copy, for logs
	Failure   string    `json:"last_failure,omitzero"` // the last failed fetch, for the operator
}

// Fetcher fetches the paused list from GitHub into the data directory.
type Fetcher struct {
	Client  *github.Client   // from NewClient
	DataDir string           // the prober's data directory; the copy is kept in DataDir/paused
	Logger  *slog.Logger     // nil discards
	Now     func() time.Time // nil means time.Now
}

// Fetch brings the last good copy of the paused list named by spec up to
// date and returns its local path, for lists.ReadPausedList. It asks GitHub
// conditionally with the ETag of the copy, so an unchanged file costs a 304.
//
// Rule R2: any failure (network, 5xx, rate limit, a file that is not a
// regular UTF-8 file matching its sha, or one with bad lines) keeps the last
// good copy, whose path is still returned, and is reported as warn (also
// logged); it never resumes a check. After a rate-limit answer no request is
// sent until its reset time (at most an hour later), and warn says so. err
// (wrapping ErrNoGoodCopy) is returned only when the list cannot be fetched
// and there is no good copy at all, or when the copy cannot be written.
func (f *Fetcher) Fetch(ctx context.Context, spec Spec) (path string, warn, err error) {
	log := f.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("source", spec.String())
	now := f.now()
	path = data.Dir(f.DataDir).PausedCopy()
	metaPath := filepath.Join(filepath.Dir(path), lastGoodMeta)
	meta, haveCopy := readCopy(path, metaPath)

	if haveCopy && now.Before(meta.NotBefore) {
		warn = fmt.Errorf("fetch paused list %s: rate limited until %s; %s", spec, meta.NotBefore.UTC().Format(time.RFC3339), meta.standing(now))
		log.Warn("paused list not fetched", "err", warn)
		return path, warn, nil
	}

	etag := ""
	if haveCopy && meta.Source == spec.String() {
		etag = meta.ETag
	}
	got, resp, ferr := getFile(ctx, f.Client, spec.Owner, spec.Repo, spec.Path, spec.Ref, etag)
	var list lists.PausedList
	if ferr == nil && !got.NotModified {
		list, ferr = checkList(spec, got.Content)
	}
	if ferr != nil {
		if !haveCopy {
			return "", nil, fmt.Errorf("fetch paused list %s: %w: %w", spec, ErrNoGoodCopy, ferr)
		}
		meta.NotBefore = retryAt(ferr, resp, now)
		meta.Failure = now.UTC().Format(time.RFC3339) + " " + ferr.Error()
		warn = fmt.Errorf("fetch paused list %s: %w; %s", spec, ferr, meta.standing(now))
		log.Warn("paused list not fetched", "err", warn)
		if err := writeMeta(metaPath, meta); err != nil {
			log.Warn("paused list metadata not saved", "err", err)
		}
		return path, warn, nil
	}

	if got.NotModified {
		log.Debug("paused list unchanged", "sha", meta.SHA)
		if meta.Failure == "" && meta.NotBefore.IsZero() && now.Sub(meta.Confirmed) < confirmEvery {
			return path, nil, nil
		}
		meta.Confirmed, meta.NotBefore, meta.Failure = now, time.Time{}, ""
		if err := writeMeta(metaPath, meta); err != nil {
			// The copy is still good; only its age is not recorded.
			log.Warn("paused list metadata not saved", "err", err)
		}
		return path, nil, nil
	}

	if err := durable.WriteFileAtomic(path, got.Content, 0o644); err != nil {
		if haveCopy {
			// The old copy is whole (the write is atomic) and still stands.
			warn = fmt.Errorf("fetch paused list %s: %w; %s", spec, err, meta.standing(now))
			log.Warn("paused list not saved", "err", warn)
			return path, warn, nil
		}
		return "", nil, fmt.Errorf("fetch paused list %s: %w: %w", spec, ErrNoGoodCopy, err)
	}
	meta = copyMeta{
		Source: spec.String(), ETag: got.ETag, SHA: got.SHA,
		Fetched: now, Confirmed: now, Entries: len(list.Entries),
	}
	if err := writeMeta(metaPath, meta); err != nil {
		log.Warn("paused list metadata not saved", "err", err)
	}
	log.Info("paused list updated", "sha", got.SHA, "entries", len(list.Entries))
	return path, nil, nil
}

func (f *Fetcher) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// checkList refuses a version of the list with any bad line, naming each by
// spec:line.
func checkList(spec Spec, content []byte) (lists.PausedList, error) {
	list, bad, err := lists.ParsePausedList(spec.String(), bytes.NewReader(content))
	if err != nil {
		return list, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(bad) > 0 {
		return list, fmt.Errorf("%w: %w", ErrMalformed, errors.Join(bad...))
	}
	return list, nil
}

// standing says which copy stands and how old it is, and whether that age
// breaks the 24-hour promise of rule S8.
func (m copyMeta) standing(now time.Time) string {
	if m.Confirmed.IsZero() {
		return "keeping the last good copy"
	}
	age := now.Sub(m.Confirmed).Truncate(time.Minute)
	s := fmt.Sprintf("keeping the last good copy (sha %.12s, last confirmed %s ago)", m.SHA, age)
	if age > data.PauseWithin {
		s += fmt.Sprintf("; older than %s: pause requests since then are not in effect (rule S8)", data.PauseWithin)
	}
	return s
}

// readCopy reports whether a last good copy exists and returns its metadata
// (zero when missing or unreadable: the copy then stands but is asked for
// without an ETag).
func readCopy(path, metaPath string) (copyMeta, bool) {
	if _, err := os.Stat(path); err != nil {
		return copyMeta{}, false
	}
	var m copyMeta
	b, err := os.ReadFile(metaPath)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return copyMeta{}, true
	}
	return m, true
}

func writeMeta(path string, m copyMeta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return durable.WriteFileAtomic(path, append(b, '\n'), 0o644)
}

// retryAt returns when GitHub allows the next request after a failure: the
// reset of an exhausted rate limit, or the Retry-After of a secondary limit
// or a 429/503, capped at maxBackoff; zero for any other failure.
func retryAt(err error, resp *github.Response, now time.Time) time.Time {
	var at time.Time
	var rl *github.RateLimitError
	var ab *github.AbuseRateLimitError
	switch {
	case errors.As(err, &rl):
		at = rl.Rate.Reset.Time
	case errors.As(err, &ab) && ab.RetryAfter != nil:
		at = now.Add(*ab.RetryAfter)
	case errors.As(err, &ab):
		at = now.Add(time.Minute)
	case resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable):
		if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
			at = now.Add(time.Duration(secs) * time.Second)
		} else if resp.StatusCode == http.StatusTooManyRequests {
			at = now.Add(time.Minute)
		}
	}
	if at.After(now.Add(maxBackoff)) {
		at = now.Add(maxBackoff)
	}
	if !at.After(now) {
		return time.Time{}
	}
	return at.UTC()
}

// ListSource returns what planner.Config takes for the paused list source
// (the -paused flag): a local file as path, or for a list kept on GitHub
// (github:OWNER/REPO/PATH[@REF]) fetch, which at each call fetches the list
// through the GitHub API at api ("" means api.github.com), with the token
// of TokenEnv if set, into dataDir and returns the local copy to read (see
// Fetcher.Fetch: the last good copy stands when GitHub fails). A bad
// github: source is an error at once.
func ListSource(source, api, dataDir string, logger *slog.Logger, now func() time.Time) (path string, fetch func(ctx context.Context) (string, error), err error) {
	if !IsSpec(source) {
		return source, nil, nil
	}
	spec, err := ParseSpec(source)
	if err != nil {
		return "", nil, err
	}
	client, err := NewClient(api, os.Getenv(TokenEnv), nil)
	if err != nil {
		return "", nil, err
	}
	f := &Fetcher{Client: client, DataDir: dataDir, Logger: logger, Now: now}
	return "", func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // the plan is due within its minute
		defer cancel()
		path, _, err := f.Fetch(ctx, spec)
		return path, err
	}, nil
}
