package site

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site/record"
)

// TestRowsDecodedWhereTouched holds a publish that decodes only the rows
// of the site's record its minute touches to what one that decodes every
// row publishes (rule P2: the index of all servers, and every server's
// file, strip, badges and feed), and to its pause record (rule P4), byte
// for byte, minute after minute:
// checks of a few servers, a day passing (rows that expire), a server
// paused and the lists read again, a check of an address no longer
// listed, the ledger's next checks moving on. A minute that reads the
// lists or a new base of the ledger, or writes a new base of the record,
// decodes every row; any other
// decodes those it renders, the index parts it writes, the rows of
// index.html and those the record's log holds, not every one (but while
// the log holds most rows, after a day passed).
func TestRowsDecodedWhereTouched(t *testing.T) {
	t.Parallel()
	const n = 400
	servers := make([]data.Server, n)
	for i := range servers {
		servers[i] = data.Server{ID: fmt.Sprintf("srv-%03d", (i*37)%n), Rank: i + 1, URL: fmt.Sprintf("https://s%d.example.com/mcp", i),
			Added: fixNow.AddDate(0, 0, -30)}
	}
	lazy, whole := newFixture(t), newFixture(t)
	both := func(do func(f *fixture)) {
		do(lazy)
		do(whole)
	}
	both(func(f *fixture) { f.writeServers(servers) })
	// The ledger as plan writes it each minute, a delta on its base: a
	// publish reads its changes, not the whole.
	// Their next checks are spread over a day, as a fleet's are.
	ledgers := map[*fixture]*spool.Ledger{lazy: benchLedger(servers), whole: benchLedger(servers)}
	for _, l := range ledgers {
		for i := range l.Servers {
			l.Servers[i].NextDue = fixNow.Add(time.Duration(i) * 24 * time.Hour / n).Unix()
		}
	}
	publish := func(f *fixture, all bool) Stats {
		cfg := f.config()
		cfg.decodeAll = all
		cfg.PreviewRows = 25 // index.html shows the first 25 by rank: their rows are decoded
		st, err := Publish(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// logFull: a minute rendered most rows and appended them to the
	// record's log, which holds them until the next base.
	now, logFull := fixNow, false
	for minute := range 18 {
		var checked []data.Server
		relisted := minute == 0
		switch {
		case minute == 15:
			now = now.Add(26 * time.Hour) // yesterday's uptimes expire
		case minute == 8:
			both(func(f *fixture) { f.writePaused(servers[7].ID + "\n") })
			relisted = true
		case minute == 11:
			checked = append(checked, data.Server{ID: servers[3].ID, URL: "https://moved.example.com/mcp"})
		default:
			now = now.Add(time.Minute)
		}
		for k := range 2 {
			checked = append(checked, servers[(minute*53+k*131)%n])
			for _, l := range ledgers {
				l.Servers[(minute*71+k*29)%n].NextDue += 3600
			}
		}
		ledgerBase := statOf(t, data.Dir(lazy.dir).Ledger())
		both(func(f *fixture) {
			f.now = now
			if err := spool.WriteLedger(f.dir, ledgers[f]); err != nil {
				t.Fatal(err)
			}
			for k, s := range checked {
				status := []data.Outcome{data.Working, data.Failing, data.NeedsKey}[(minute+k)%3]
				r := result(s, now.Add(-time.Duration(k+1)*time.Second), status, map[bool]string{true: "HTTP 502"}[status == data.Failing])
				if status == data.Working && minute%2 == 0 {
					// index.json counts those speaking 2026-07-28 and those
					// with tool problems: facts a row not decoded keeps too.
					r.Protocol = data.DiscoverProtocolVersion
					r.Support = &data.ProtocolSupport{Versions: []string{"2026-07-28"}, Session: new(false), Answers: data.AnswersJSON}
					r.ToolProblems = []data.ToolProblem{{Tool: "search", Rule: data.ToolRuleNoDescription, Message: "no description"}}
				}
				f.results(r)
			}
		})
		base := statOf(t, data.Dir(lazy.dir).SiteStore())
		got, want := publish(lazy, false), publish(whole, true)
		if got.Rendered != want.Rendered || got.Written != want.Written || got.Removed != want.Removed || len(got.Bad) != len(want.Bad) {
			t.Fatalf("minute %d: rendered, written, removed, bad %d %d %d %d; decoding every row %d %d %d %d", minute,
				got.Rendered, got.Written, got.Removed, len(got.Bad), want.Rendered, want.Written, want.Removed, len(want.Bad))
		}
		// The pause record too: each row's pause is compared with it.
		pauses := func(f *fixture) map[string][]byte {
			b, err := os.ReadFile(data.Dir(f.dir).PauseRecord())
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			return map[string][]byte{"pause record": b}
		}
		sameTree(t, fmt.Sprintf("minute %d", minute), pauses(whole), pauses(lazy))
		if sameTree(t, fmt.Sprintf("minute %d", minute), testutil.MustTree(t, whole.out), testutil.MustTree(t, lazy.out)); t.Failed() {
			t.FailNow()
		}
		newBase := statOf(t, data.Dir(lazy.dir).SiteStore()) != base
		// A new base of the ledger (plan writes one when its delta grows)
		// is read whole, and compared with every row.
		ledgerWhole := statOf(t, data.Dir(lazy.dir).Ledger()) != ledgerBase
		switch {
		case relisted || newBase || ledgerWhole:
			if got.RowsRead != n {
				t.Errorf("minute %d (lists read %v, a new base %v, the ledger read whole %v): %d rows decoded; want all %d",
					minute, relisted, newBase, ledgerWhole, got.RowsRead, n)
			}
		case got.Rendered > n/4 || logFull:
			// A day passed: most rows are rendered, and the minutes
			// after decode them from the record's log.
		case got.RowsRead < got.Rendered || got.RowsRead >= n:
			t.Errorf("minute %d: %d rows decoded for %d rendered of %d", minute, got.RowsRead, got.Rendered, n)
		default:
			t.Logf("minute %d: %d rows decoded for %d rendered of %d", minute, got.RowsRead, got.Rendered, n)
		}
		logFull = (logFull || got.Rendered > n/4) && !newBase
		if want.RowsRead != n {
			t.Errorf("minute %d: decoding every row read %d of %d", minute, want.RowsRead, n)
		}
	}
}

// statOf returns the size and modification time of path, "none" when
// there is none.
func statOf(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
}

// TestStoreRowsDecodedWhenAsked: a record read decodes the rows whose
// files expire by the time it is given and no other; a row asked for is
// decoded from the file, what every row's id and facts say is the same
// decoded or not, as are the rows paused and what index.json counts of
// them, after decoded rows changed, and every row decoded at last is the
// row written. A
// read of the file that fails after (a disk error) is kept: the row asked
// for is not taken as decoded, and the record is not saved.
func TestStoreRowsDecodedWhenAsked(t *testing.T) {
	t.Parallel()
	const n, due = 3000, 5_000
	rng := rand.New(rand.NewPCG(7, 8))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%05d", i)
	}
	want := storeOf(ids)
	versions := []string{"", "2025-06-18", "2025-11-25", data.DiscoverProtocolVersion}
	expiring := 0
	for i := range want.rows {
		r := &want.rows[i]
		r.Rank, r.URLSum, r.LastCheck, r.Tools = i+1, rng.Uint64(), rng.Int64N(1e12), rng.Int64N(40)-1
		r.setStatus(data.Outcomes[rng.IntN(len(data.Outcomes))])
		r.Paused, r.Speaks, r.Problems = rng.IntN(5) == 0, rng.IntN(3) == 0, int32(rng.IntN(4))-1
		r.protocol = protocolNumber(versions[rng.IntN(len(versions))])
		r.Expires = []int64{0, due - 1, due, due + 1}[rng.IntN(4)]
		if r.Expires != 0 && r.Expires <= due {
			expiring++
		}
	}
	want.sortOrder()
	enc, err := want.encode()
	if err != nil {
		t.Fatal(err)
	}
	file := &failingReader{r: bytes.NewReader(enc.file())}
	st, err := readStore(file, int64(len(enc.file())), due, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.decodedRows() != expiring {
		t.Fatalf("%d rows decoded as read; want the %d that expire by %d", st.decodedRows(), expiring, due)
	}
	for i := range n {
		w := &want.rows[i]
		if f := st.factsOf(i); st.idOf(i) != ids[i] || f.status != w.status || f.paused != w.Paused || f.speaks != w.Speaks ||
			f.protocol != w.protocol || (f.problems < 0) != (w.Problems < 0) || (f.problems > 0) != (w.Problems > 0) {
			t.Fatalf("row %d not decoded (%v): %s %+v; want %s %+v", i, st.isLoaded(i), st.idOf(i), f, ids[i], *w)
		}
	}
	var paused []int
	for i := range want.rows {
		if want.rows[i].Paused {
			paused = append(paused, i)
		}
	}
	if got := st.pausedRows(); !slices.Equal(got, paused) {
		t.Fatalf("%d rows paused, not decoded; want %d", len(got), len(paused))
	}
	for _, i := range []int{0, 17, 18, n - 1} {
		r := *st.row(i)
		if !st.isLoaded(i) || st.id(&r) != ids[i] || r.Rank != i+1 || r.URLSum != want.rows[i].URLSum {
			t.Errorf("row %d asked for: %s %+v; want %s %+v", i, st.id(&r), r, ids[i], want.rows[i])
		}
	}
	// Decoded rows change what index.json counts: counted as they are,
	// not as the base had them.
	for _, i := range []int{17, 18} {
		r := st.row(i)
		r.setStatus(data.Failing)
		r.Paused, r.Problems, r.protocol = !r.Paused, 5, protocolNumber("2024-11-05")
		want.rows[i] = *r
	}
	type totals struct {
		status                 []int
		protocols              record.ProtocolTotals
		problems, factsNotRead int
	}
	var lazyTotals totals
	lazyTotals.status, lazyTotals.protocols, lazyTotals.problems, lazyTotals.factsNotRead = rowTotals(st)
	lazyTotals.status = slices.Clone(lazyTotals.status)
	file.fail = true
	k := slices.IndexFunc(seq(0, n), func(i int) bool { return !st.isLoaded(i) })
	if r := *st.row(k); st.isLoaded(k) || r.URLSum != 0 || st.err() == nil || !strings.Contains(st.err().Error(), "read site state") {
		t.Fatalf("row %d read by a failing disk: decoded %v, %+v, error %v", k, st.isLoaded(k), r, st.err())
	}
	if err := st.save(newWriter(t.TempDir()), t.TempDir(), []int{k}); err == nil {
		t.Error("a record with a row that could not be read was saved")
	}
	file.fail, st.lazy.err = false, nil
	if !sameRows(st, want) || st.decodedRows() != n {
		t.Errorf("the rows decoded at last are not those written (%d decoded)", st.decodedRows())
	}
	var whole totals
	whole.status, whole.protocols, whole.problems, whole.factsNotRead = rowTotals(st)
	if !reflect.DeepEqual(lazyTotals, whole) {
		t.Errorf("index.json's counts, rows not decoded:\n%+v\nevery row decoded:\n%+v", lazyTotals, whole)
	}
	paused = paused[:0]
	for i := range want.rows {
		if want.rows[i].Paused {
			paused = append(paused, i)
		}
	}
	if got := st.pausedRows(); !slices.Equal(got, paused) {
		t.Errorf("%d rows paused once every row is decoded; want %d", len(got), len(paused))
	}
}

// failingReader reads r, or fails every read while fail is set.
type failingReader struct {
	r    io.ReaderAt
	fail bool
}

func (f *failingReader) ReadAt(b []byte, off int64) (int, error) {
	if f.fail {
		return 0, errors.New("input/output error")
	}
	return f.r.ReadAt(b, off)
}
