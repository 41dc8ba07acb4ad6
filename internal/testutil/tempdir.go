package testutil

import (
	"flag"
	"os"
	"syscall"
	"testing"
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
	dir, err := os.MkdirTemp(ramDisk, "prober-test-")
	if err != nil {
		return tb.TempDir()
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// ramDiskHasRoom reports whether there is a RAM disk with ramDiskRoom free.
func ramDiskHasRoom() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(ramDisk, &st) == nil && uint64(st.Bavail)*uint64(st.Bsize) >= ramDiskRoom
}
