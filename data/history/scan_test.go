package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/internal/durable"
)

// TestScanParquetInBatches: ScanParquet gives a file's results in order,
// in batches of at most scanBatch, each result as ReadParquet reads it,
// lists and all, though the batches' slices are reused; a file whose
// checksum is wrong gives none, and an error of damage.
func TestScanParquetInBatches(t *testing.T) {
	var rows []ResultRow
	for i := range 2*scanBatch + 300 {
		r := datatest.NewResult(fmt.Sprint("s", i), datatest.T0.Add(time.Duration(i)*time.Second), data.Working)
		r.Tools = []string{fmt.Sprint("tool", i), "search"}[:1+i%2]
		rows = append(rows, RowOf(r))
	}
	path := filepath.Join(t.TempDir(), "part-many.parquet")
	if err := writeParquet(path, rows); err != nil {
		t.Fatal(err)
	}
	want, err := ReadParquet(path)
	if err != nil || len(want) != len(rows) {
		t.Fatalf("read %d results, %v; want %d", len(want), err, len(rows))
	}
	var got []data.Result
	batches := 0
	n, err := ScanParquet(path, func(rs []data.Result) {
		if len(rs) > scanBatch {
			t.Errorf("a batch of %d results", len(rs))
		}
		batches++
		got = append(got, rs...)
	})
	if err != nil || n != len(rows) || batches < 3 {
		t.Fatalf("scanned %d results in %d batches, %v; want %d in 3 or more", n, batches, err, len(rows))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) || !reflect.DeepEqual(want[i], rows[i].Result()) {
			t.Fatalf("result %d: scanned %+v, read %+v", i, got[i], want[i])
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, path, int(fi.Size()/2))
	n, err = ScanParquet(path, func([]data.Result) {})
	if n != 0 || !errors.Is(err, durable.ErrDamaged) {
		t.Errorf("a damaged file: %d results, %v; want none and an error of damage", n, err)
	}
}
