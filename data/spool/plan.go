package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// ErrNoPlan is returned by ReadPlan when no plan was written for the minute.
var ErrNoPlan = errors.New("no plan for this minute")

// MaxPlanLine is the longest plan line read. A planned check names a server
// of the ranked list, whose id and address are bounded (MaxIDBytes,
// MaxAddressBytes), and at most MaxShared of them (PlannedCheck.Also), each
// byte at most 6 in JSON, so a plan line takes under 1 MiB; a longer one is
// damage, skipped with an error naming it.
const MaxPlanLine = 1 << 20

// MaxShared is the most servers one check is for (PlannedCheck and its
// Also): more listed at one address are checked in groups of MaxShared,
// each a check of its own, so a plan line stays within MaxPlanLine.
const MaxShared = 64

// PlanKeep is how long plan files are kept before the minute planned: as
// long as the minute markers (a minute older than that is never run), and
// more than the 24 hours RebuildLedger reads. Older plans are removed by
// WritePlan, so plans/ holds at most PlanKeep of minutes (2,881 files).
const PlanKeep = 48 * time.Hour

// WritePlan writes the checks of one minute atomically to data.Dir.Plan, one JSON
// object a line ending in its checksum (see appendLineCRC), in the order
// given, then removes the plans of minutes more than PlanKeep before it
// (PrunePlans).
func WritePlan(dir string, minute time.Time, checks []data.PlannedCheck) error {
	buf := make([]byte, 0, 256*len(checks))
	for _, c := range checks {
		c.At, c.Due = c.At.UTC(), c.Due.UTC()
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("write plan %s: %w", minute.UTC().Format(time.RFC3339), err)
		}
		buf = append(buf, durable.AppendLineCRC(b)...)
	}
	if err := durable.WriteFileAtomic(data.Dir(dir).Plan(minute), buf, 0o644); err != nil {
		return err
	}
	return PrunePlans(dir, minute.Add(-PlanKeep))
}

// PrunePlans removes the plan files of the minutes before since: the days
// before since's whole, and the files of since's day before it. It lists
// the directory of one day at most and reads the names only up to since,
// so a plan pays for it about the same every minute. A file it cannot
// remove is an error naming it.
func PrunePlans(dir string, since time.Time) error {
	days, err := data.Dir(dir).PlanDays()
	if err != nil {
		return fmt.Errorf("prune plans: %w", err)
	}
	since = since.UTC()
	for _, d := range days {
		day, ok := data.DayOfPlans(d)
		switch {
		case !ok:
			continue
		case !day.AddDate(0, 0, 1).After(since):
			if err := os.RemoveAll(d); err != nil {
				return fmt.Errorf("prune plans before %s: %w", since.Format(time.RFC3339), err)
			}
			continue
		case day.After(since):
			return nil
		}
		files, err := os.ReadDir(d)
		if err != nil {
			return fmt.Errorf("prune plans: %w", err)
		}
		for _, f := range files { // sorted by name: by minute
			p := filepath.Join(d, f.Name())
			m, ok := data.MinuteOfPlan(p)
			if ok && !m.Before(since) {
				break // the rest are later
			}
			if ok {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("prune plans before %s: %w", since.Format(time.RFC3339), err)
				}
			}
		}
	}
	return nil
}

// ReadPlan reads the plan of one minute. A missing plan is ErrNoPlan. A
// line that does not parse, fails its checksum, lacks an id or a time, or is
// longer than MaxPlanLine is left out and returned in bad, naming
// file:line; the other checks are returned in plan order. Leaving a check
// out runs fewer checks, never one earlier or closer to another of its host
// than planned, so the rest of the plan keeps the spacing it was made to
// keep; the planner plans what is missing again. err is non-nil only when
// the plan cannot be read at all.
func ReadPlan(dir string, minute time.Time) (checks []data.PlannedCheck, bad []error, err error) {
	path := data.Dir(dir).Plan(minute)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("read plan %s: %w", path, ErrNoPlan)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read plan: %w", err)
	}
	bad = durable.ScanLines(path, b, MaxPlanLine, func(row []byte) error {
		if err := durable.CheckLineCRC(row); err != nil {
			return err
		}
		var c data.PlannedCheck
		if err := json.Unmarshal(row, &c); err != nil {
			return err
		}
		if c.ID == "" || c.At.IsZero() {
			return errors.New("check without id or time")
		}
		checks = append(checks, c)
		return nil
	})
	return checks, bad, nil
}
