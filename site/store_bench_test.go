package site

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// benchStoreFile returns state.bin of n servers as a publish leaves it,
// each row's numbers of the sizes a fleet's are (checked within the last
// hour, a rank, uptimes, next plans and expiries in the next hours, the
// hashes of its files).
func benchStoreFile(tb testing.TB, n int) []byte {
	tb.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("srv%07d", i)
	}
	st := storeOf(ids)
	now := fixNow.UnixMilli()
	up := statusIndex(data.Working)
	for i := range st.all() {
		r := &st.all()[i]
		r.Rank, r.URLSum, r.status = n-i, rnd.Uint64(), up
		r.LastCheck = now - rnd.Int64N(3_600_000)
		r.Uptime7d, r.Tools, r.Problems = 9000+rnd.Int64N(1000), rnd.Int64N(40), int32(rnd.IntN(3))
		r.PlanNext, r.Expires = now+rnd.Int64N(3_600_000), now+rnd.Int64N(86_400_000)
		r.protocol, r.Speaks = protocolNumber("2025-06-18"), i%3 == 0
		r.HTMLSum, r.StripSum = rnd.Uint64(), rnd.Uint64()
	}
	st.sortOrder()
	enc, err := st.encode()
	if err != nil {
		tb.Fatal(err)
	}
	return enc.file()
}

// BenchmarkLoadStore reads the site's record of 100,000 servers as every
// publish at fixNow does: its head checked whole, the rows due within the
// minute decoded and a window of blocks checked, the others left for when
// a row is asked for; BenchmarkBaselineLoadStore reads and sums the whole
// file, as a publish did before v7: the ratio is what a minute reads of
// the record against reading it all.
func BenchmarkLoadStore(b *testing.B) { benchLoadStore(b, true) }

func BenchmarkBaselineLoadStore(b *testing.B) { benchLoadStore(b, false) }

func benchLoadStore(b *testing.B, decode bool) {
	path := filepath.Join(b.TempDir(), "state.bin")
	file := benchStoreFile(b, 100_000)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if !decode {
			if _, _, err := durable.ReadSummed(path); err != nil {
				b.Fatal(err)
			}
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		_, err = readStore(f, int64(len(file)), fixNow.Add(time.Minute).UnixMilli(), 0)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}
