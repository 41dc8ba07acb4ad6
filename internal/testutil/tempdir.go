package testutil

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ramDisk is where Linux mounts a tmpfs for every machine: files in memory.
const ramDisk = "/dev/shm"

// ramDiskRoom is the free space ShortInMemory wants on the RAM disk, many
// times what the tests of a package keep at once, so that a small one (a
// container's 64 MB) is left alone.
const ramDiskRoom = 1 << 30

// ShortInMemory is for a TestMain: under -short it points the temporary
// directory (TMPDIR: t.TempDir, os.MkdirTemp("", ...)) at the RAM disk
// when there is one with room and TMPDIR is not set, and reports whether
// it did. On the disk of a small virtual machine creating and fsyncing a
// file costs about a millisecond, against microseconds in memory, and the
// tests of a publish or a fold create thousands; make test leaves them on
// the disk, where the prober writes. It calls flag.Parse first, as a
// TestMain that reads the test flags must.
func ShortInMemory() bool {
	flag.Parse()
	if !testing.Short() || os.Getenv("TMPDIR") != "" {
		return false
	}
	if !ramDiskHasRoom() {
		return false
	}
	return os.Setenv("TMPDIR", ramDisk) == nil
}

// MemTempDir returns a new temporary directory on the RAM disk, removed
// when tb ends, or tb.TempDir() where there is no RAM disk with room: for
// a test whose point is not the disk (what it counts, not what survives a
// crash) and that writes enough to wait minutes for fsyncs otherwise.
func MemTempDir(tb testing.TB) string {
	tb.Helper()
	if !ramDiskHasRoom() {
		return tb.TempDir()
	}
	sweepOnce.Do(func() { sweepStale(ramDisk, time.Now()) })
	dir, err := os.MkdirTemp(ramDisk, memPrefix)
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// memPrefix starts the name of every directory MemTempDir makes.
const memPrefix = "prober-test-"

// staleAfter is how old a directory of MemTempDir's is when no test can
// still be using it: past every test binary's -timeout (make soak's 3 h is
// the longest).
const staleAfter = 24 * time.Hour

var sweepOnce sync.Once

// sweepStale removes the directories of MemTempDir's under root left
// longer than staleAfter before now. A test binary that runs past its
// -timeout panics without running its cleanups, and what it left on the
// RAM disk would hold the machine's memory until a reboot.
func sweepStale(root string, now time.Time) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), memPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > staleAfter {
			os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// ramDiskHasRoom reports whether there is a RAM disk with ramDiskRoom free.
func ramDiskHasRoom() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(ramDisk, &st) == nil && uint64(st.Bavail)*uint64(st.Bsize) >= ramDiskRoom
}
