package history

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/data/spool/spooltest"
	"plug.directory/prober/internal/durable"
)

func durPtr(d time.Duration) *time.Duration { return &d }

// TestHistoryFacts: what a check saw on its way (issue 19) goes through the
// journal and the fold into the Parquet history and back, at millisecond
// precision, null where it does not apply.
func TestHistoryFacts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := datatest.NewResult("full", datatest.T0, data.Working)
	full.TLS = &data.TLSInfo{Version: "TLS 1.3", NotAfter: datatest.T0.Add(20 * 24 * time.Hour), Issuer: "CN=R11,O=Let's Encrypt,C=US", Names: []string{"full.example", "www.full.example"}}
	full.Timings = &data.Timings{DNS: durPtr(12 * time.Millisecond), Connect: durPtr(30*time.Millisecond + 400*time.Microsecond),
		TLS: durPtr(45 * time.Millisecond), FirstByte: []time.Duration{80 * time.Millisecond, 0, 95 * time.Millisecond}}
	lab := datatest.NewResult("lab", datatest.T0.Add(time.Second), data.Failing) // lab override: no lookup; the connect failed
	lab.Timings = &data.Timings{Connect: durPtr(3 * time.Millisecond)}
	none := datatest.NewResult("none", datatest.T0.Add(2*time.Second), data.NotCheckable)
	spooltest.MustJournal(t, dir, "run-1", full, lab, none).Close()
	if _, err := Fold(dir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	rs, bad, err := ReadHistory(dir, datatest.T0, datatest.T0)
	if err != nil || len(bad) > 0 || len(rs) != 3 {
		t.Fatalf("history: %d rows, %v %v", len(rs), bad, err)
	}
	wantFull := *full.Timings
	wantFull.Connect = durPtr(30 * time.Millisecond)
	for i, want := range []struct {
		tls *data.TLSInfo
		tm  *data.Timings
	}{{full.TLS, &wantFull}, {nil, lab.Timings}, {nil, nil}} {
		if got := rs[i]; !reflect.DeepEqual(got.TLS, want.tls) || !reflect.DeepEqual(got.Timings, want.tm) {
			t.Errorf("%s read back with TLS %+v, timings %+v; want %+v, %+v", got.ID, got.TLS, got.Timings, want.tls, want.tm)
		}
	}
}

// TestHistoryPreviousSchema: a file the version before the facts' columns
// wrote, summed, is no damaged file: it reads with those columns null, and
// compacts with the new ones.
func TestHistoryPreviousSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	MustFoldRuns(t, dir, "run", datatest.T0, 1, 2)
	// The previous version's row: ResultRow without the facts' columns.
	rt := reflect.TypeOf(ResultRow{})
	var fields []reflect.StructField
	for i := range rt.NumField() {
		if f := rt.Field(i); f.Name == "TLSVersion" {
			break
		}
		fields = append(fields, rt.Field(i))
	}
	prev := reflect.StructOf(fields)
	row := reflect.New(prev).Elem()
	cur := reflect.ValueOf(RowOf(datatest.NewResult("prev", datatest.T0.Add(time.Minute), data.Working)))
	for i := range prev.NumField() {
		row.Field(i).Set(cur.FieldByName(prev.Field(i).Name))
	}
	var buf bytes.Buffer
	sum := &summingWriter{w: &buf}
	w := parquet.NewWriter(sum, parquet.SchemaOf(row.Interface()), parquet.Compression(&parquet.Zstd), parquet.WriteBufferSize(0))
	if err := w.Write(row.Interface()); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.SetKeyValueMetadata(SumKey, fmt.Sprintf("%d %08x", sum.n, sum.sum))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-prev.parquet")
	if err := durable.WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadParquet(path)
	if err != nil || len(got) != 1 || got[0].ID != "prev" || got[0].TLS != nil || got[0].Timings != nil {
		t.Fatalf("read previous version's file: %+v, %v", got, err)
	}
	if st, err := Compact(dir, datatest.T0.Add(24*time.Hour), slog.New(slog.DiscardHandler)); err != nil || len(st.Bad) > 0 || st.Rows != 3 {
		t.Fatalf("compact: %+v %v, want the 3 rows merged", st, err)
	}
	if n := mustCount(t, dir); n != 3 {
		t.Errorf("%d rows after compaction, want 3", n)
	}
}

// TestDaysLeft holds DaysLeft to its edges: a day's change comes at each
// whole day before expiry, and expiry itself is -1.
func TestDaysLeft(t *testing.T) {
	const day = 24 * time.Hour
	c := data.TLSInfo{NotAfter: datatest.T0}
	for _, tc := range []struct {
		before time.Duration
		want   int
	}{{15*day + time.Second, 15}, {15 * day, 14}, {14*day + time.Hour, 14}, {day, 0}, {time.Second, 0}, {0, -1}, {-day + time.Second, -1}, {-day, -2}} {
		if got := c.DaysLeft(datatest.T0.Add(-tc.before)); got != tc.want || c.Expired(datatest.T0.Add(-tc.before)) != (tc.want < 0) {
			t.Errorf("%v before expiry: %d days left (expired %v), want %d", tc.before, got, c.Expired(datatest.T0.Add(-tc.before)), tc.want)
		}
	}
}
