package site

import (
	"fmt"
	"sync"
	"testing"
)

// TestProtocolNumbers: each protocol version has one number in the
// process, whichever goroutine numbers it first, and its number names it
// back; a record's reader, by its cache of the last versions seen, gets
// the same numbers, past the cache's size too.
func TestProtocolNumbers(t *testing.T) {
	t.Parallel()
	if n := protocolNumber(""); n != 0 || protocolName(0) != "" {
		t.Fatalf(`"" numbered %d, 0 names %q`, n, protocolName(0))
	}
	versions := make([]string, 40)
	for i := range versions {
		versions[i] = fmt.Sprintf("test-%p-%d", t, i) // this test's own
	}
	got := make([][]uint32, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			var pc protocolCache
			for k := range 3 * len(versions) {
				v := versions[(k*7+g)%len(versions)]
				n := protocolNumber(v)
				if k%2 == 0 {
					n = pc.number(v)
				}
				got[g] = append(got[g], n)
			}
		})
	}
	wg.Wait()
	seen := map[uint32]string{}
	for g := range got {
		for k, n := range got[g] {
			v := versions[(k*7+g)%len(versions)]
			if protocolName(n) != v || n == 0 {
				t.Fatalf("%s numbered %d, which names %q", v, n, protocolName(n))
			}
			if w, ok := seen[n]; ok && w != v {
				t.Fatalf("%d numbers both %s and %s", n, w, v)
			}
			seen[n] = v
		}
	}
	if len(seen) != len(versions) {
		t.Errorf("%d numbers for %d versions", len(seen), len(versions))
	}
}
