package site

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
)

// fixContact is the operator's address of every fixture (Config.Contact).
const fixContact = "stop-checks@example.org"

// fixNow is the clock of every fixture.
var fixNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	testutil.ShortInMemory() // a publish creates some eighty files
	code := m.Run()
	for _, b := range []*builtFixture{&standardFixture, &storyFixture} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

// fixture is a data directory, a ranked list, a paused list and an output
// directory.
type fixture struct {
	tb      testing.TB
	dir     string // data directory
	list    string
	paused  string
	out     string
	now     time.Time
	journal int
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	return newFixtureAt(tb, tb.TempDir())
}

// newFixtureAt is newFixture in the directory root.
func newFixtureAt(tb testing.TB, root string) *fixture {
	tb.Helper()
	f := fixtureIn(tb, root)
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	f.writePaused("")
	return f
}

// fixtureIn is the fixture whose files are under root, as they are.
func fixtureIn(tb testing.TB, root string) *fixture {
	return &fixture{tb: tb, dir: filepath.Join(root, "data"), list: filepath.Join(root, "servers.csv"),
		paused: filepath.Join(root, "paused.txt"), out: filepath.Join(root, "out"), now: fixNow}
}

// builtFixture is a fixture built once per test binary, in a directory
// TestMain removes; each test that asks for it gets a copy of its own.
type builtFixture struct {
	once     sync.Once
	dir      string
	journals int // journals it wrote; 0 until it is built
}

// copy returns a copy of the fixture build makes from a new one, building
// it on the first call.
func (b *builtFixture) copy(t *testing.T, build func(f *fixture)) *fixture {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "site-fixture-")
		if err != nil {
			t.Fatal(err)
		}
		b.dir = dir
		f := newFixtureAt(t, dir)
		build(f)
		b.journals = f.journal
	})
	if b.journals == 0 {
		t.Fatal("the shared fixture could not be built: see the first test that asked for it")
	}
	root := filepath.Join(t.TempDir(), "fixture")
	testutil.CopyTree(t, b.dir, root)
	f := fixtureIn(t, root)
	f.journal = b.journals
	return f
}

// standardFixture is newStandard's.
var standardFixture builtFixture

// newStandard returns a new fixture holding standard().
func newStandard(t *testing.T) *fixture {
	t.Helper()
	return standardFixture.copy(t, (*fixture).standard)
}

func (f *fixture) writeServers(servers []data.Server) {
	f.tb.Helper()
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, servers); err != nil {
		f.tb.Fatal(err)
	}
	f.writeFile(f.list, buf.Bytes())
}

func (f *fixture) writePaused(text string) {
	f.tb.Helper()
	f.writeFile(f.paused, []byte(text))
}

// writeFile writes a file and moves its modification time on, so that a
// rewrite within one clock tick is still seen as a change.
func (f *fixture) writeFile(path string, b []byte) {
	f.tb.Helper()
	var mtime time.Time
	if fi, err := os.Stat(path); err == nil {
		mtime = fi.ModTime().Add(time.Second)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		f.tb.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			f.tb.Fatal(err)
		}
	}
}

// journal appends results as one finished run's journal.
func (f *fixture) results(rs ...data.Result) {
	f.tb.Helper()
	f.journal++
	j, err := spool.CreateJournal(f.dir, "run-"+strings.Repeat("0", 3)+string(rune('a'+f.journal%26))+time.Now().Format("150405.000000000"))
	if err != nil {
		f.tb.Fatal(err)
	}
	for _, r := range rs {
		if err := j.Append(r); err != nil {
			f.tb.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		f.tb.Fatal(err)
	}
}

// fold folds the finished journals into Parquet, as a run does.
func (f *fixture) fold() {
	f.tb.Helper()
	if _, err := history.Fold(f.dir, f.now, slog.New(slog.DiscardHandler)); err != nil {
		f.tb.Fatal(err)
	}
}

func (f *fixture) config() Config {
	return Config{DataDir: f.dir, ServersPath: f.list, PausedPath: f.paused, OutDir: f.out,
		Now: func() time.Time { return f.now }, Logger: slog.New(slog.DiscardHandler), Workers: 4, Contact: fixContact}
}

// MustPublish publishes and fails the test on error.
func (f *fixture) MustPublish() Stats {
	f.tb.Helper()
	st, err := Publish(context.Background(), f.config())
	if err != nil {
		f.tb.Fatalf("publish: %v", err)
	}
	return st
}

// result returns a result of server s started at t with outcome o.
func result(s data.Server, t time.Time, o data.Outcome, detail string) data.Result {
	r := data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Reason: data.ReasonRoutine, Status: o, Detail: detail,
		Planned: t, Started: t, Finished: t.Add(1200 * time.Millisecond), Duration: 1200 * time.Millisecond,
		Requests: 3, Conns: 1, ProberVersion: "test"}
	if o.Answered() {
		r.TLS = &data.TLSInfo{Version: "TLS 1.3", NotAfter: fixNow.Add(60 * 24 * time.Hour), Issuer: "CN=R11,O=Let's Encrypt,C=US", Names: []string{s.Host()}}
		r.Timings = &data.Timings{DNS: fixDur(12 * time.Millisecond), Connect: fixDur(30 * time.Millisecond), TLS: fixDur(45 * time.Millisecond),
			FirstByte: []time.Duration{200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}}
		r.Protocol, r.Transport = "2025-11-25", data.TransportStreamable
		r.HTTPStatus = 200
		if o == data.NeedsKey {
			r.HTTPStatus = 401
			r.KeyInfo = "https://" + s.Host() + "/.well-known/oauth-protected-resource/mcp"
		}
	}
	if code, ok := strings.CutPrefix(detail, "HTTP "); ok { // an answer came: its status
		r.HTTPStatus, _ = strconv.Atoi(code)
	}
	if o == data.Working {
		r.ServerName, r.ServerVersion = s.ID+"-server", "1.2.0"
		r.ServerTitle, r.ServerDescription, r.ServerWebsite = "The "+s.ID+" server", "Searches and fetches "+s.ID+"'s documents.", "https://"+s.Host()+"/about"
		r.Tools = []string{"search", "fetch"}
		r.ToolCount = 2
		// discover refused with -32022 naming what it speaks
		r.Support = &data.ProtocolSupport{Versions: []string{"2025-11-25", "2025-06-18"}, Session: new(true), Answers: data.AnswersSSE}
	}
	return r
}

func fixDur(d time.Duration) *time.Duration { return &d }

var (
	srvWorking  = data.Server{ID: "alpha", Rank: 1, URL: "https://alpha.example.com/mcp", Added: fixNow.Add(-90 * 24 * time.Hour)}
	srvKey      = data.Server{ID: "bravo", Rank: 2, URL: "https://bravo.example.com/mcp", Added: fixNow.Add(-90 * 24 * time.Hour)}
	srvRefused  = data.Server{ID: "charlie", Rank: 3, URL: "https://charlie.example.com/mcp", Added: fixNow.Add(-90 * 24 * time.Hour)}
	srvLocal    = data.Server{ID: "delta", Rank: 4, URL: "", Added: fixNow.Add(-90 * 24 * time.Hour)}
	srvFailing  = data.Server{ID: "echo", Rank: 2500, URL: "https://echo.example.com/mcp", Added: fixNow.Add(-90 * 24 * time.Hour)}
	srvPaused   = data.Server{ID: "foxtrot", Rank: 6, URL: "https://foxtrot.example.com/mcp", Added: fixNow.Add(-90 * 24 * time.Hour)}
	srvNew      = data.Server{ID: "golf", Rank: 7, URL: "https://golf.example.com/mcp", Added: fixNow.Add(-2 * time.Minute)}
	fixServers  = []data.Server{srvWorking, srvKey, srvRefused, srvLocal, srvFailing, srvPaused, srvNew}
	hourAgo     = fixNow.Add(-time.Hour)
	twoHoursAgo = fixNow.Add(-2 * time.Hour)
)

// standard writes the fixture every publish test starts from: a server of
// each outcome, history in Parquet and in a journal, foxtrot paused.
func (f *fixture) standard() {
	f.writeServers(fixServers)
	f.writePaused("# paused at the owner's request\nfoxtrot\n")
	var old []data.Result
	// Eight days of hourly checks of alpha, one failing eight days ago, one
	// failing three days ago: 24h, 7d and 30d uptime differ.
	for h := 8 * 24; h >= 2; h-- {
		t := fixNow.Add(-time.Duration(h)*time.Hour + 17*time.Second)
		o := data.Working
		if h == 8*24-1 || h == 3*24 {
			o = data.Failing
		}
		old = append(old, result(srvWorking, t, o, map[bool]string{true: "HTTP 502"}[o == data.Failing]))
	}
	old = append(old,
		result(srvKey, twoHoursAgo, data.NeedsKey, "HTTP 401"),
		result(srvRefused, twoHoursAgo, data.Working, ""),
		result(srvLocal, fixNow.Add(-20*time.Hour), data.NotCheckable, "no address"),
		result(srvFailing, fixNow.Add(-25*time.Hour), data.Working, ""),
		result(srvPaused, fixNow.Add(-3*24*time.Hour), data.Working, ""),
	)
	f.results(old...)
	f.fold()
	// The planner's ledger: golf's first check is planned, alpha's host caps
	// stretch its cadence to two hours.
	l := spool.NewLedger()
	l.Created, l.LastMinute = fixNow.Add(-100*24*time.Hour).Unix(), fixNow.Unix()
	for _, s := range fixServers {
		e := spool.LedgerServer{ID: s.ID, Rank: int32(s.Rank), URLHash: spool.URLHash(s.URL), Cadence: int32(data.Tier(s.Rank) / time.Second)}
		switch s.ID {
		case srvNew.ID:
			e.NextDue = fixNow.Add(2 * time.Minute).Unix()
		case srvWorking.ID:
			e.Cadence, e.NextDue = 7200, fixNow.Add(time.Hour+17*time.Second).Unix()
		}
		l.Servers = append(l.Servers, e)
	}
	if err := spool.WriteLedger(f.dir, l); err != nil {
		f.tb.Fatal(err)
	}
	// The latest checks are still in a journal.
	f.results(
		result(srvWorking, hourAgo.Add(17*time.Second), data.Working, ""),
		result(srvKey, hourAgo.Add(123456789), data.NeedsKey, "HTTP 401"), // nanoseconds, as a run records them
		result(srvRefused, hourAgo, data.Refused, "HTTP 429"),
		result(srvFailing, fixNow.Add(-50*time.Minute), data.Failing, "connection refused"),
		result(srvFailing, fixNow.Add(-45*time.Minute), data.Failing, "connection refused"),
	)
}
