package testutil

import (
	"os"
	"testing"
)

// ChildEnv is the environment of a child process a test starts (Chromium,
// node, the test binary re-executed): this process's, with the temporary
// directory (TMPDIR) a new one of tb's. What the child leaves there, when
// a test kills it before it cleans up (a lab CA, Chromium's singleton
// socket), goes with tb's temporary directories, not into /tmp for ever.
func ChildEnv(tb testing.TB) []string {
	tb.Helper()
	return append(os.Environ(), "TMPDIR="+tb.TempDir())
}
