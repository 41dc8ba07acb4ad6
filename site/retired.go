package site

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// retiredKeep is how long the record of a server that left the ranked list
// is kept for its return: the incidents' year, and a month more.
const retiredKeep = 13 // months

// retiredDir returns where the records of servers that left the ranked list
// wait, one directory per month of leaving (YYYY-MM), under the data
// directory: a server that returns within retiredKeep is the same server,
// with its history, not a new one.
func retiredDir(dataDir string) string { return filepath.Join(dataDir, "site", "retired") }

// retiredPaths returns the retired copies of a server's published record and
// of its older checks (in either layout: olderPath, olderJSONPath) in the
// directory of month.
func retiredPaths(dataDir, month, id string) (record, older, olderJSON string) {
	base := filepath.Join(retiredDir(dataDir), month, filepath.FromSlash(id))
	return base + ".json", base + ".older.bin", base + ".older.json"
}

// retire keeps the published record of a server that left the list, and its
// older checks, aside under the data directory before its files go.
func (p *publication) retire(id string) error {
	record, older, olderJSON := retiredPaths(p.cfg.DataDir, p.now.UTC().Format("2006-01"), id)
	for _, mv := range [][2]string{
		{p.serverFile(id), record},
		{olderPath(p.cfg.DataDir, id), older},
		{olderJSONPath(p.cfg.DataDir, id), olderJSON},
	} {
		if err := os.MkdirAll(filepath.Dir(mv[1]), 0o755); err != nil {
			return fmt.Errorf("retire %s: %w", id, err)
		}
		if err := os.Rename(mv[0], mv[1]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("retire %s: %w", id, err)
		}
	}
	return nil
}

// unretire brings back the record of a server that returns to the list: its
// older checks go back in place, and the path of its retired record is
// returned for loadSummary to read ("" when it was never retired, or longer
// ago than retiredKeep). The newest month that holds it wins.
func (p *publication) unretire(id string) (string, error) {
	months, err := os.ReadDir(retiredDir(p.cfg.DataDir))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read retired records: %w", err)
	}
	slices.Reverse(months) // ReadDir sorts by name: YYYY-MM, oldest first
	for _, m := range months {
		record, older, olderJSON := retiredPaths(p.cfg.DataDir, m.Name(), id)
		if _, err := os.Stat(record); err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(olderPath(p.cfg.DataDir, id)), 0o755); err != nil {
			return "", fmt.Errorf("bring back %s: %w", id, err)
		}
		for _, mv := range [][2]string{{older, olderPath(p.cfg.DataDir, id)}, {olderJSON, olderJSONPath(p.cfg.DataDir, id)}} {
			if err := os.Rename(mv[0], mv[1]); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("bring back %s: %w", id, err)
			}
		}
		return record, nil
	}
	return "", nil
}

// pruneRetired removes the months of retired records older than
// retiredKeep: one directory listing a publish.
func (p *publication) pruneRetired() error {
	months, err := os.ReadDir(retiredDir(p.cfg.DataDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read retired records: %w", err)
	}
	oldest := p.now.UTC().AddDate(0, -retiredKeep, 0).Format("2006-01")
	for _, m := range months {
		if m.Name() < oldest {
			if err := os.RemoveAll(filepath.Join(retiredDir(p.cfg.DataDir), m.Name())); err != nil {
				return fmt.Errorf("prune retired records: %w", err)
			}
		}
	}
	return nil
}
