package history

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
)

// TestHistoryZstdIsParquets: a history file written with historyZstd is
// byte for byte the file parquet.Zstd writes, and so is each page, also
// an empty one and from several goroutines at once.
func TestHistoryZstdIsParquets(t *testing.T) {
	t.Parallel()
	var rows []ResultRow
	for i := range 200 {
		rows = append(rows, RowOf(datatest.NewResult(fmt.Sprintf("s%05d", i), datatest.T0.Add(time.Duration(i)*time.Second), data.Outcomes[i%len(data.Outcomes)])))
	}
	write := func(more ...parquet.WriterOption) []byte {
		var b bytes.Buffer
		w := newHistoryWriter(&b, more...)
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if got, want := write(), write(parquet.Compression(&parquet.Zstd)); !bytes.Equal(got, want) {
		t.Errorf("the history's file: %d bytes, parquet.Zstd's %d, not the same", len(got), len(want))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				src := bytes.Repeat([]byte(fmt.Sprintf("page %d of %d ", i, g)), i*i)
				got, err := historyZstd.Encode(nil, src)
				if err != nil {
					t.Error(err)
					return
				}
				want, _ := parquet.Zstd.Encode(nil, src)
				if !bytes.Equal(got, want) {
					t.Errorf("%d bytes: encoded as %x, parquet.Zstd as %x", len(src), got, want)
				}
				if back, err := historyZstd.Decode(nil, got); err != nil || !bytes.Equal(back, src) {
					t.Errorf("%d bytes: decoded back as %d, %v", len(src), len(back), err)
				}
			}
		})
	}
	wg.Wait()
}
