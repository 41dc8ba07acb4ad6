package pause

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// MustGolden compares got with testdata/name, or rewrites it with -update.
func MustGolden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the golden file (run with -update if intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// renderRequests lists requests as the golden files keep them: method, URI
// and the JSON body indented.
func renderRequests(reqs []fakeRequest) []byte {
	var b bytes.Buffer
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s %s\n", r.Method, r.URI)
		if r.Body != "" {
			var ind bytes.Buffer
			if json.Indent(&ind, []byte(r.Body), "", "  ") != nil {
				ind.Reset()
				ind.WriteString(r.Body)
			}
			b.Write(bytes.TrimSpace(ind.Bytes()))
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}
