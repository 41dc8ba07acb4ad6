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

// TestHistoryFacts: what a check saw on its way goes through the
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
	full.Support = &data.ProtocolSupport{Versions: []string{"2026-07-28", "2025-11-25"}, Session: new(false), Answers: data.AnswersJSON}
	lab.Support = &data.ProtocolSupport{Session: new(true), Answers: data.AnswersMixed} // no discover listing
	full.ServerTitle, full.ServerDescription, full.ServerWebsite = "Full <Server>", "Says all.", "https://full.example/docs"
	lab.KeyInfo = "https://lab.example/.well-known/oauth-protected-resource"
	none := datatest.NewResult("none", datatest.T0.Add(2*time.Second), data.NotCheckable)
	spooltest.MustJournal(t, dir, "run-1", full, lab, none).Close()
	if _, err := Fold(dir, datatest.T0, slog.New(slog.DiscardHandler)); err != nil {
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
		ps  *data.ProtocolSupport
	}{{full.TLS, &wantFull, full.Support}, {nil, lab.Timings, lab.Support}, {nil, nil, nil}} {
		if got := rs[i]; !reflect.DeepEqual(got.TLS, want.tls) || !reflect.DeepEqual(got.Timings, want.tm) || !reflect.DeepEqual(got.Support, want.ps) {
			t.Errorf("%s read back with TLS %+v, timings %+v, support %+v; want %+v, %+v, %+v", got.ID, got.TLS, got.Timings, got.Support, want.tls, want.tm, want.ps)
		}
	}
	for i, want := range []data.Result{full, lab, none} {
		got := rs[i]
		if got.ServerTitle != want.ServerTitle || got.ServerDescription != want.ServerDescription || got.ServerWebsite != want.ServerWebsite || got.KeyInfo != want.KeyInfo {
			t.Errorf("%s read back saying of itself %q, %q, %q, key info %q; want %q, %q, %q, %q", got.ID, got.ServerTitle, got.ServerDescription, got.ServerWebsite, got.KeyInfo,
				want.ServerTitle, want.ServerDescription, want.ServerWebsite, want.KeyInfo)
		}
	}
}

// TestHistoryPreviousSchema: a file of a version before columns were
// added, summed, is no damaged file: it reads with those columns null, and
// compacts with the new ones. Each case is a version's row: ResultRow
// without the columns from the first one a later version added (the
// certificate and timings from TLSVersion, how it spoke from
// DiscoverVersions, what it says of itself from ServerTitle).
func TestHistoryPreviousSchema(t *testing.T) {
	t.Parallel()
	for _, firstNew := range []string{"TLSVersion", "DiscoverVersions", "ServerTitle"} {
		t.Run("before_"+firstNew, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			MustFoldRuns(t, dir, "run", datatest.T0, 1, 2)
			path := filepath.Join(data.Dir(dir).ResultDay(datatest.T0), "part-prev.parquet")
			prev := previousSchemaFile(t, firstNew, datatest.NewResult("prev", datatest.T0.Add(time.Minute), data.Working))
			if err := durable.WriteFileAtomic(path, prev, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadParquet(path)
			if err != nil || len(got) != 1 || got[0].ID != "prev" || got[0].Support != nil ||
				(firstNew == "TLSVersion" && (got[0].TLS != nil || got[0].Timings != nil)) {
				t.Fatalf("read previous version's file: %+v, %v", got, err)
			}
			if st, err := Compact(dir, datatest.T0.Add(24*time.Hour), slog.New(slog.DiscardHandler)); err != nil || len(st.Bad) > 0 || st.Rows != 3 {
				t.Fatalf("compact: %+v %v, want the 3 rows merged", st, err)
			}
			if n := mustCount(t, dir); n != 3 {
				t.Errorf("%d rows after compaction, want 3", n)
			}
		})
	}
}

// previousSchemaFile returns a summed Parquet file of r in the schema of
// ResultRow's fields before firstNew, as a version before it wrote them.
func previousSchemaFile(t *testing.T, firstNew string, r data.Result) []byte {
	t.Helper()
	rt := reflect.TypeOf(ResultRow{})
	var fields []reflect.StructField
	for i := range rt.NumField() {
		if f := rt.Field(i); f.Name == firstNew {
			break
		}
		fields = append(fields, rt.Field(i))
	}
	prev := reflect.StructOf(fields)
	row := reflect.New(prev).Elem()
	cur := reflect.ValueOf(RowOf(r))
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
	return buf.Bytes()
}
