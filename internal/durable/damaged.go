package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ErrDamaged is wrapped by the errors of files whose bytes do not decode
// or do not match their checksum: derived files (the state, the ledger) are
// rebuilt, and history files are set aside, rather than read again.
var ErrDamaged = errors.New("damaged")

// DamagedError says which kind of file is damaged, and is ErrDamaged.
type DamagedError string

func (e DamagedError) Error() string        { return string(e) }
func (e DamagedError) Is(target error) bool { return target == ErrDamaged }

// DamagedDir returns where damaged files are set aside under the data
// directory dir, kept for inspection: outside the directories any reader
// lists, so a file set aside is never read again nor reported twice.
func DamagedDir(dir string) string { return filepath.Join(dir, "damaged") }

// SetAside moves path into the damaged directory of dir, under its path
// relative to dir with the time now appended, and returns where it went.
func SetAside(dir, path string, now time.Time) (string, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		rel = filepath.Base(path)
	}
	aside := filepath.Join(DamagedDir(dir), rel+"."+now.UTC().Format("20060102T150405.000000000"))
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return "", fmt.Errorf("set aside %s: %w", path, err)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("set aside %s: %w", path, err)
	}
	return aside, nil
}
