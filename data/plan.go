package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PlanPath returns where the plan for the minute starting at minute is kept
// under the data directory dir: dir/plans/YYYY-MM-DD/HHMM.jsonl (UTC).
func PlanPath(dir string, minute time.Time) string {
	m := minute.UTC()
	return filepath.Join(dir, "plans", m.Format("2006-01-02"), m.Format("1504")+".jsonl")
}

// ErrNoPlan is returned by ReadPlan when no plan was written for the minute.
var ErrNoPlan = errors.New("no plan for this minute")

// WritePlan writes the checks of one minute atomically to PlanPath, one JSON
// object a line, in the order given.
func WritePlan(dir string, minute time.Time, checks []PlannedCheck) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, c := range checks {
		c.At, c.Due = c.At.UTC(), c.Due.UTC()
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("write plan %s: %w", minute.UTC().Format(time.RFC3339), err)
		}
	}
	return WriteFileAtomic(PlanPath(dir, minute), buf.Bytes(), 0o644)
}

// ReadPlan reads the plan of one minute. A missing plan is ErrNoPlan; a line
// that does not parse is an error naming the file and line, and no check of
// that plan is returned, since running part of a corrupt plan could break the
// host spacing it was made to keep.
func ReadPlan(dir string, minute time.Time) ([]PlannedCheck, error) {
	path := PlanPath(dir, minute)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read plan %s: %w", path, ErrNoPlan)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	defer f.Close()
	var checks []PlannedCheck
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var c PlannedCheck
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if c.ID == "" || c.At.IsZero() {
			return nil, fmt.Errorf("%s:%d: check without id or time", path, line)
		}
		checks = append(checks, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	return checks, nil
}
