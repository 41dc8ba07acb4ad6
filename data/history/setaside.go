package history

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/data"
)

// setAside moves path into the damaged directory of dir, under its path
// relative to dir with the time now appended, and returns where it went.
func setAside(dir, path string, now time.Time) (string, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		rel = filepath.Base(path)
	}
	aside := filepath.Join(data.Dir(dir).Damaged(), rel+"."+now.UTC().Format("20060102T150405.000000000"))
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		return "", fmt.Errorf("set aside %s: %w", path, err)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("set aside %s: %w", path, err)
	}
	return aside, nil
}
