package data

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Dir is the data directory plan, run and publish share. Every name in it
// is written here and nowhere else, and each name a program reads back
// (a journal's minute, a marker's minute, a partition's day) is parsed here
// by the function beside the one that formats it, as litestream's
// ltx.FormatFilename and ltx.ParseFilename:
//
//	plans/YYYY-MM-DD/HHMM.jsonl   the plan of a minute (data/spool)
//	plans/ledger.bin              the planner's ledger (data/spool)
//	journal/NAME.jsonl            a run's results, until folded (data/spool)
//	run/minutes/…, run/…          the runs' markers (data/spool, runner)
//	tooldefs/HASH.json            tool definitions by hash (data/spool)
//	results/date=YYYY-MM-DD/      the Parquet history (data/history)
//	replica/date=YYYY-MM-DD/      its second copy (data/history)
//	state/states.bin              the state derived from it (data/history)
//	damaged/                      files set aside (internal/durable)
//	servers/, paused/             the lists' last good copies (data/lists)
//	site/                         the site's own record (site)
type Dir string

// Plan returns the plan file of minute (UTC): plans/YYYY-MM-DD/HHMM.jsonl.
func (d Dir) Plan(minute time.Time) string {
	m := minute.UTC()
	return filepath.Join(string(d), "plans", m.Format(dayLayout), m.Format("1504")+".jsonl")
}

// PlanDays returns the directories of plan files, one a day, sorted
// (oldest first); DayOfPlans gives the day of each. The error is
// filepath.Glob's.
func (d Dir) PlanDays() ([]string, error) {
	return sorted(filepath.Glob(filepath.Join(string(d), "plans", "????-??-??")))
}

// DayOfPlans returns the day (UTC) of a directory of plan files (PlanDays),
// and false for another directory.
func DayOfPlans(dir string) (time.Time, bool) {
	t, err := time.Parse(dayLayout, filepath.Base(dir))
	return t, err == nil
}

// MinuteOfPlan returns the minute of a plan file (Plan), and false for
// another file.
func MinuteOfPlan(path string) (time.Time, bool) {
	name, ok := strings.CutSuffix(filepath.Base(path), ".jsonl")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(dayLayout+"/1504", filepath.Base(filepath.Dir(path))+"/"+name)
	return t, err == nil
}

// PlanLock returns the lock planners take before writing plans and the ledger.
func (d Dir) PlanLock() string { return filepath.Join(string(d), "plans", ".plan.lock") }

// Ledger returns the planner's ledger.
func (d Dir) Ledger() string { return filepath.Join(string(d), "plans", "ledger.bin") }

// LedgerDelta returns what changed in the planner's ledger since Ledger
// was written: the records and host starts that differ from it.
func (d Dir) LedgerDelta() string { return filepath.Join(string(d), "plans", "ledger-delta.bin") }

// JournalDir returns the directory of the journals not yet folded.
func (d Dir) JournalDir() string { return filepath.Join(string(d), "journal") }

// Journal returns the journal named name (RunJournal, SimJournal).
func (d Dir) Journal(name string) string { return filepath.Join(d.JournalDir(), name+".jsonl") }

// Journals returns the journals in the directory, sorted by name. The
// error is filepath.Glob's, which only a bad pattern gives.
func (d Dir) Journals() ([]string, error) { return sorted(filepath.Glob(d.Journal("*"))) }

// RunJournal returns the name of the journal the run of minute by process
// pid writes: run-YYYYMMDDTHHMM-PID, the minute in UTC. JournalMinute reads
// the minute back.
func RunJournal(minute time.Time, pid int) string {
	return fmt.Sprintf("%s%s-%d", runPrefix, minute.UTC().Format(journalLayout), pid)
}

// SimJournal returns the name of the journal the simulator writes for
// minute: sim-YYYYMMDDTHHMM.
func SimJournal(minute time.Time) string { return simPrefix + minute.UTC().Format(journalLayout) }

// JournalMinute returns the minute in the name of a journal, or of a file
// named after one (its Parquet part, part-run-20261202T1925-42.parquet),
// with run set for a run's journal (RunJournal) rather than the
// simulator's; ok is false for any other name.
func JournalMinute(name string) (minute time.Time, run, ok bool) {
	base := filepath.Base(name)
	for _, prefix := range []string{runPrefix, simPrefix} {
		i := strings.Index(base, prefix)
		if i < 0 || len(base) < i+len(prefix)+len(journalLayout) {
			continue
		}
		t, err := time.Parse(journalLayout, base[i+len(prefix):][:len(journalLayout)])
		if err == nil {
			return t, prefix == runPrefix, true
		}
	}
	return time.Time{}, false, false
}

// The parts of a journal's name.
const (
	runPrefix     = "run-"
	simPrefix     = "sim-"
	journalLayout = "20060102T1504"
)

// MinuteMarker returns the marker a run of minute leaves when it claims it:
// run/minutes/YYYY-MM-DDTHHMM.json. MinuteOfMarker reads the minute back.
func (d Dir) MinuteMarker(minute time.Time) string {
	return filepath.Join(d.MinuteMarkers(), minute.UTC().Format(markerLayout)+".json")
}

// MinuteMarkers returns the directory of the minute markers.
func (d Dir) MinuteMarkers() string { return filepath.Join(string(d), "run", "minutes") }

// MinuteOfMarker returns the minute a marker file's name or path names, and
// false for a file that is not a marker.
func MinuteOfMarker(path string) (time.Time, bool) {
	name, ok := strings.CutSuffix(filepath.Base(path), ".json")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(markerLayout, name)
	return t, err == nil
}

// markerLayout names a minute's marker file, before ".json".
const markerLayout = "2006-01-02T1504"

// Recorded returns the file naming the latest minute whose run recorded
// every planned check.
func (d Dir) Recorded() string { return filepath.Join(string(d), "run", "recorded.json") }

// Interrupted returns the file where checks cancelled at shutdown are
// recorded, one JSON object a line.
func (d Dir) Interrupted() string { return filepath.Join(string(d), "run", "interrupted.jsonl") }

// ToolDefs returns the directory of tool definitions stored by hash.
func (d Dir) ToolDefs() string { return filepath.Join(string(d), "tooldefs") }

// ToolDefSet returns the file of the definition set whose hash is hash.
func (d Dir) ToolDefSet(hash string) string { return filepath.Join(d.ToolDefs(), hash+".json") }

// Results returns the root of the Parquet history,
// results/date=YYYY-MM-DD/*.parquet (Hive partitioning, which DuckDB reads
// as a date column).
func (d Dir) Results() string { return filepath.Join(string(d), "results") }

// ResultDay returns the partition of day (UTC) in the history.
func (d Dir) ResultDay(day time.Time) string { return partition(d.Results(), day) }

// ResultDays returns the history's partitions, sorted (oldest first); DayOf
// gives the day of each. The error is filepath.Glob's.
func (d Dir) ResultDays() ([]string, error) {
	return sorted(filepath.Glob(partition(d.Results(), time.Time{})))
}

// ResultParts returns every Parquet file of the history, sorted.
func (d Dir) ResultParts() ([]string, error) { return parts(d.Results()) }

// Replica returns the root of the history's second copy, laid out as
// Results.
func (d Dir) Replica() string { return filepath.Join(string(d), "replica") }

// ReplicaParts returns every Parquet file of the second copy, sorted.
func (d Dir) ReplicaParts() ([]string, error) { return parts(d.Replica()) }

// DayOf returns the day (YYYY-MM-DD) of a partition directory of the
// history or its copy, "" for another directory. Days compare in order as
// strings.
func DayOf(partition string) string {
	day, ok := strings.CutPrefix(filepath.Base(partition), partitionPrefix)
	if !ok {
		return ""
	}
	return day
}

// partition returns the partition of day under root; the zero day gives
// the pattern of every partition.
func partition(root string, day time.Time) string {
	if day.IsZero() {
		return filepath.Join(root, partitionPrefix+"*")
	}
	return filepath.Join(root, partitionPrefix+day.UTC().Format(dayLayout))
}

// parts returns the Parquet files of every partition under root, sorted.
func parts(root string) ([]string, error) {
	return sorted(filepath.Glob(filepath.Join(partition(root, time.Time{}), "*.parquet")))
}

// The layout of a partition's name.
const (
	partitionPrefix = "date="
	dayLayout       = "2006-01-02"
)

// State returns the snapshot of the per-server state derived from the
// history; its deltas sit beside it.
func (d Dir) State() string { return filepath.Join(string(d), "state", "states.bin") }

// FoldLock returns the lock of the fold, compaction and scrub: one at a
// time changes the history and the state.
func (d Dir) FoldLock() string { return filepath.Join(string(d), ".fold.lock") }

// Damaged returns where damaged files are set aside, kept for inspection:
// outside the directories any reader scans.
func (d Dir) Damaged() string { return filepath.Join(string(d), "damaged") }

// HistoryDamage returns the record of history files found damaged.
func (d Dir) HistoryDamage() string { return filepath.Join(d.Damaged(), "history.jsonl") }

// ServersCopy returns the last good copy of the ranked list.
func (d Dir) ServersCopy() string { return filepath.Join(string(d), "servers", "last-good.csv") }

// ListNotice returns the record of when the list's bad rows were last told.
func (d Dir) ListNotice() string { return filepath.Join(string(d), "servers", "noticed.json") }

// PausedCopy returns the last good copy of a remote paused list.
func (d Dir) PausedCopy() string { return filepath.Join(string(d), "paused", "last-good.txt") }

// PausedLocalCopy returns the last good copy of a local paused list.
func (d Dir) PausedLocalCopy() string {
	return filepath.Join(string(d), "paused", "local-last-good.txt")
}

// Site returns the directory of the site's own record.
func (d Dir) Site() string { return filepath.Join(string(d), "site") }

// SiteStore returns the site's record of every server between runs.
func (d Dir) SiteStore() string { return filepath.Join(d.Site(), "state.bin") }

// SiteUnpublished returns the results the site could not publish yet: those
// of servers whose files the last publish could not write, for the next.
func (d Dir) SiteUnpublished() string { return filepath.Join(d.Site(), "unpublished.jsonl") }

// PauseRecord returns the record of pause changes the site shows.
func (d Dir) PauseRecord() string { return filepath.Join(d.Site(), "pauses.jsonl") }

// sorted sorts the paths filepath.Glob returned.
func sorted(paths []string, err error) ([]string, error) {
	sort.Strings(paths)
	return paths, err
}
