package pause

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkFetch compares the minute's fetch of an unchanged list (a 304
// to a conditional request) with a full download of the same 5,000-line
// list, parsed and written atomically: the baseline the ETag saves.
func BenchmarkFetch(b *testing.B) {
	var list strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&list, "server-%05d  # 2026-12-02 asked by the owner\n", i)
	}
	f := newFake(b, map[string]string{listPath: list.String()})
	dir := b.TempDir()
	fe := &Fetcher{Client: fakeClient(b, f, "tok"), DataDir: dir, Now: func() time.Time { return t0 }}
	meta := filepath.Join(dir, "paused", lastGoodMeta)
	for _, bc := range []struct {
		name   string
		forget bool // drop the ETag, so each fetch downloads
	}{{"full_200", true}, {"unchanged_304", false}} {
		b.Run(bc.name, func(b *testing.B) {
			if _, _, err := fe.Fetch(context.Background(), testSpec); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if bc.forget {
					os.Remove(meta)
				}
				if _, warn, err := fe.Fetch(context.Background(), testSpec); err != nil || warn != nil {
					b.Fatal(err, warn)
				}
			}
		})
	}
}
