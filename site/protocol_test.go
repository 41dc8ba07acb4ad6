package site

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/record"
)

// readIndex reads the published index.json and its parts.
func readIndex(t *testing.T, f *fixture) record.IndexFile {
	t.Helper()
	idx, err := ReadIndex(f.out)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// tallyProtocols counts the published server files as index.json must:
// per version of their protocol block, those speaking 2026-07-28, those
// whose last result has tool problems.
func tallyProtocols(t *testing.T, f *fixture, idx record.IndexFile) (record.ProtocolTotals, int) {
	t.Helper()
	want := record.ProtocolTotals{Versions: []record.VersionTotal{}}
	problems := 0
	byVersion := map[string]int{}
	for _, r := range idx.Rows {
		sf := readServerFile(t, f, r.ID)
		if p := sf.Protocol; p != nil {
			byVersion[p.Version]++
			if p.Speaks20260728 {
				want.Speaks20260728++
			}
		}
		if sf.LastResult != nil && len(sf.LastResult.ToolProblems) > 0 {
			problems++
		}
	}
	for v, n := range byVersion {
		want.Versions = append(want.Versions, record.VersionTotal{Version: v, Count: n})
	}
	slices.SortFunc(want.Versions, func(a, b record.VersionTotal) int { return strings.Compare(b.Version, a.Version) })
	return want, problems
}

// wantIndexFacts asserts index.json's counts are
// those of the published server files, and the ones given.
func wantIndexFacts(t *testing.T, f *fixture, speaks, problems int) {
	t.Helper()
	idx := readIndex(t, f)
	tally, tp := tallyProtocols(t, f, idx)
	if idx.FactsPending != 0 || idx.ToolProblems != tp || idx.Protocols.Speaks20260728 != tally.Speaks20260728 || !slices.Equal(idx.Protocols.Versions, tally.Versions) {
		t.Errorf("index counts %+v, %d with tool problems, %d pending; the server files say %+v, %d", idx.Protocols, idx.ToolProblems, idx.FactsPending, tally, tp)
	}
	if idx.Protocols.Speaks20260728 != speaks || idx.ToolProblems != problems {
		t.Errorf("index: %d speak 2026-07-28, %d with tool problems; want %d, %d", idx.Protocols.Speaks20260728, idx.ToolProblems, speaks, problems)
	}
}

// TestProtocolPublished proves the protocol facts on the site: the server
// file's last result and protocol block say how the server spoke, the
// block stays while later checks fail, the page shows it, and index.json
// counts the servers speaking 2026-07-28, those per version negotiated and
// those with tool problems, as the server files say; a rebuild
// from the Parquet history gives the same.
func TestProtocolPublished(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	wantIndexFacts(t, f, 0, 0)

	modern := result(srvWorking, fixNow.Add(-10*time.Minute), data.Working, "")
	modern.Protocol = data.DiscoverProtocolVersion
	modern.Support = &data.ProtocolSupport{Versions: []string{"2026-07-28", "2025-11-25"}, Session: new(false), Answers: data.AnswersJSON}
	modern.ToolProblems = []data.ToolProblem{{Tool: "search", Rule: data.ToolRuleNoDescription, Message: "no description"}}
	f.results(modern)
	f.now = fixNow.Add(-9 * time.Minute)
	f.MustPublish()
	got := readServerFile(t, f, "alpha")
	p, lr := got.Protocol, got.LastResult
	if p == nil || p.Version != "2026-07-28" || p.Era != "discover" || p.Transport != data.TransportStreamable || !p.Speaks20260728 ||
		p.Session == nil || *p.Session || p.Answers == nil || *p.Answers != "json" || !slices.Equal(p.DiscoverVersions, modern.Support.Versions) ||
		!p.SeenAt.Equal(modern.Started) {
		t.Errorf("alpha's protocol %+v; want 2026-07-28 (discover), listed, no session, JSON, seen %v", p, modern.Started)
	}
	if lr == nil || !slices.Equal(lr.DiscoverVersions, modern.Support.Versions) || lr.Session == nil || *lr.Session || lr.Answers == nil || *lr.Answers != "json" {
		t.Errorf("alpha's last result %+v; want the check's protocol facts", lr)
	}
	wantIndexFacts(t, f, 1, 1)
	page, err := os.ReadFile(filepath.Join(f.out, "servers", "alpha.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2026-07-28 (discover) over streamable-http; speaks 2026-07-28; no session; answers as JSON; server/discover lists <code>2026-07-28</code>, <code>2025-11-25</code>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("alpha.html lacks %q", want)
		}
	}
	index, err := os.ReadFile(filepath.Join(f.out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(index), "How the servers last spoke: 1 of them speak protocol 2026-07-28; by the version last negotiated: 2026-07-28: 1; 2025-11-25: ") ||
		!strings.Contains(string(index), "Servers whose tools clients will reject: 1.") {
		t.Errorf("index.html does not show the counts")
	}

	down := result(srvWorking, fixNow.Add(-5*time.Minute), data.Failing, "HTTP 502")
	f.results(down)
	f.now = fixNow.Add(-4 * time.Minute)
	f.MustPublish()
	got = readServerFile(t, f, "alpha")
	if got.Protocol == nil || got.Protocol.Version != "2026-07-28" || !got.Protocol.SeenAt.Equal(modern.Started) {
		t.Errorf("after a failing check, protocol %+v; want the last handshake's kept", got.Protocol)
	}
	if lr := got.LastResult; lr.DiscoverVersions != nil || lr.Session != nil || lr.Answers != nil {
		t.Errorf("failing last result says %+v; want null facts", lr)
	}
	wantIndexFacts(t, f, 1, 0) // still speaks it; its last check listed no tools

	f.fold()
	for _, dir := range []string{filepath.Join(f.dir, "site"), f.out} {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	if st := f.MustPublish(); !st.Rebuilt {
		t.Fatal("not a rebuild")
	}
	if re := readServerFile(t, f, "alpha"); re.Protocol == nil || !slices.Equal(re.Protocol.DiscoverVersions, modern.Support.Versions) || re.Protocol.Answers == nil {
		t.Errorf("after a rebuild from the history, protocol %+v", re.Protocol)
	}
	wantIndexFacts(t, f, 1, 0)
}

// TestStoreV2 proves a site record of the layout before the index's facts
// counts still loads: its rows as they were, their facts not
// read yet; and the publisher reads them within a few runs, a bounded
// number each (factsBackfill), without a rebuild, to the counts of a
// site record that had them all along.
func TestStoreV2(t *testing.T) {
	t.Parallel()
	text, sum, err := durable.ReadSummed(filepath.Join("testdata", "state-v2.bin")) // written by 0ec59d4's encode
	if err != nil {
		t.Fatal(err)
	}
	s, err := decodeStore(text, sum)
	if err != nil {
		t.Fatalf("a v2 site record: %v", err)
	}
	if len(s.all()) != 2 || s.id(&s.all()[0]) != "alpha" || s.all()[0].Tools != 2 || s.all()[0].EffCad != 7200 || !s.all()[1].Paused || s.Meta.List.Size != 120 {
		t.Fatalf("v2 rows read as %+v, meta %+v", s.all(), s.Meta)
	}
	for i, r := range s.all() {
		if r.Problems != -1 || r.Protocol() != "" {
			t.Errorf("%s: facts %q %d; want not read yet (-1)", s.id(&s.all()[i]), r.Protocol(), r.Problems)
		}
	}

	f := newStandard(t)
	f.MustPublish()
	want := readIndex(t, f)
	st, err := loadStore(f.dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range st.all() {
		st.all()[i].protocol, st.all()[i].Speaks, st.all()[i].Problems = 0, false, -1 // as a v2 record loads
	}
	enc, err := st.encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := durable.WriteFileAtomic(data.Dir(f.dir).SiteStore(), enc.file(), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { factsBackfill = n }(factsBackfill)
	factsBackfill = 3
	// Each run reads at least 3 rows' facts, and only 3 on top of those it
	// renders anyway (none in the first run).
	before := len(st.all())
	for run := 0; before > 0; run++ {
		if run == 3 {
			t.Fatalf("%d rows still pending after 3 runs", before)
		}
		f.now = f.now.Add(time.Minute)
		stats := f.MustPublish()
		pending := readIndex(t, f).FactsPending
		if stats.Rebuilt || pending > max(0, before-3) || (run == 0 && (stats.Rendered != 3 || pending != before-3)) {
			t.Errorf("run %d: rebuilt %v, %d rendered, %d pending of %d; want no rebuild and 3 read", run, stats.Rebuilt, stats.Rendered, pending, before)
		}
		before = pending
	}
	if got := readIndex(t, f); got.Protocols.Speaks20260728 != want.Protocols.Speaks20260728 || !slices.Equal(got.Protocols.Versions, want.Protocols.Versions) || got.ToolProblems != want.ToolProblems {
		t.Errorf("caught up: %+v %d; want %+v %d", got.Protocols, got.ToolProblems, want.Protocols, want.ToolProblems)
	}
}
