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
	var st syscall.Statfs_t
	if err := syscall.Statfs(ramDisk, &st); err != nil || uint64(st.Bavail)*uint64(st.Bsize) < ramDiskRoom {
		return false
	}
	return os.Setenv("TMPDIR", ramDisk) == nil
}
