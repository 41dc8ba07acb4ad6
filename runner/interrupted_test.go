package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestInterruptedBounded: the record of checks interrupted at shutdown
// grows to interruptedMax, then is moved to NAME.1 and begun again, so
// restarts over years keep it within twice that; no line is cut.
func TestInterruptedBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "interrupted.jsonl")
	line := bytes.Repeat([]byte("x"), 1000)
	const lines = 3*interruptedMax/1001 + 7
	for range lines {
		if err := appendInterrupted(path, line); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	for _, p := range []string{path, path + ".1"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b)%1001 != 0 || int64(len(b)) > interruptedMax+1001 {
			t.Errorf("%s holds %d bytes; want whole lines, at most %d", filepath.Base(p), len(b), interruptedMax+1001)
		}
		total += int64(len(b))
	}
	if total >= int64(lines)*1001 {
		t.Errorf("the record and the one before hold %d bytes of the %d appended: nothing was let go", total, lines*1001)
	}
}
