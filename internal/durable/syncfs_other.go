//go:build !linux

package durable

import "fmt"

// CanSyncFS is false where no call flushes one file system: a caller
// fsyncs each file as it writes it, and SyncFS fsyncs the directories.
const CanSyncFS = false

// SyncFS fsyncs each of dirs: where there is no syncfs(2), the files in
// them were fsynced one by one as they were written (CanSyncFS), and only
// the renames into dirs remain to be made durable. The error names the
// directory.
func SyncFS(dirs ...string) error {
	for _, dir := range dirs {
		if err := SyncDir(dir); err != nil {
			return fmt.Errorf("sync file system of %s: %w", dir, err)
		}
	}
	return nil
}
