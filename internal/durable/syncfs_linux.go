package durable

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// CanSyncFS is true where SyncFS flushes a whole file system in one call,
// so that files written without an fsync each are made durable at once.
const CanSyncFS = true

// SyncFS makes durable every file and directory written on the file
// systems holding dirs, each file system once (Linux syncfs(2)): one call
// instead of an fsync per file. A kernel without syncfs gets one sync(2),
// which flushes every file system. The error names the directory whose file
// system could not be flushed.
func SyncFS(dirs ...string) error {
	seen := map[uint64]bool{}
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("sync file system of %s: %w", dir, err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if seen[uint64(st.Dev)] {
				continue
			}
			seen[uint64(st.Dev)] = true
		}
		if err := syncFS(dir); err != nil {
			return err
		}
	}
	return nil
}

func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync file system of %s: %w", dir, err)
	}
	defer d.Close()
	err = unix.Syncfs(int(d.Fd()))
	if errors.Is(err, unix.ENOSYS) {
		syscall.Sync()
		return nil
	}
	if err != nil {
		return fmt.Errorf("sync file system of %s: %w", dir, err)
	}
	return nil
}
