// Package spool keeps the files one minute hands to the next step: the
// plan the planner writes and the runner reads (plan.go), the journal of
// results the runner appends and the fold reads (journal.go, runs.go), the
// planner's ledger of every server's next check (ledger.go), the markers of
// the minutes run and recorded (minutes.go) and the tool definitions a
// journal line refers to by hash (tooldefs.go). A spool is where work waits
// between one program and the next; the name is not "store" because the
// site already has its store (DATA/site/state.bin), and one word has one
// meaning here.
package spool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// Journal is the append-only, fsynced record of the results of one run. A
// result is durable once Append returns, so a run killed at any moment loses
// no completed check. The process writing a journal holds an exclusive flock
// on it, which tells Fold that the journal is still growing; the kernel
// drops the lock when the process dies.
type Journal struct {
	mu   sync.Mutex
	cond sync.Cond // signalled when a batch is durable
	f    *os.File
	path string
	dir  string // the data directory, whose tool definition store Append fills

	// Group commit: lines appended while a batch is being written and
	// fsynced wait in pending and go to disk together in the next batch,
	// with one fsync, so a burst of checks ending at once is not written
	// one fsync after another.
	pending []byte
	started uint64 // batches taken from pending
	synced  uint64 // batches durable (or failed)
	writing bool   // a batch is being written
	err     error  // the first write or sync that failed; the journal is then broken
	closed  bool
}

// CreateJournal creates dir/journal/<name>.jsonl and locks it. It fails if a
// journal of that name exists, so that two runs never share one.
func CreateJournal(dir, name string) (*Journal, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("create journal %q: bad name", name)
	}
	jdir := data.Dir(dir).JournalDir()
	if err := os.MkdirAll(jdir, 0o755); err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	// The journal is locked under a name Fold does not list, then renamed:
	// Fold never sees it unlocked, so it never folds and removes it early.
	path := data.Dir(dir).Journal(name)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("create journal %s: %w", path, os.ErrExist)
	}
	tmp := filepath.Join(jdir, "."+name+".new")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("lock journal %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("create journal: %w", err)
	}
	if err := durable.SyncDir(jdir); err != nil {
		f.Close()
		return nil, err
	}
	j := &Journal{f: f, path: path, dir: dir}
	j.cond.L = &j.mu
	return j, nil
}

// Path returns the journal's file name.
func (j *Journal) Path() string { return j.path }

// Append writes r, bounded (Result.Bound), as one line ending in its
// checksum (see ReadJournal) and fsyncs it: r is durable when Append
// returns nil. Safe for concurrent use: lines appended at the same time
// share one write and one fsync. Once a write or fsync has failed, every
// later Append fails too (what was written before stays readable).
func (j *Journal) Append(r data.Result) error {
	// The definitions go to their store first: a line names only their hash.
	if err := PutToolDefs(j.dir, r.ToolsHash, r.ToolDefs, r.Finished); err != nil {
		return fmt.Errorf("append result %s to %s: %w", r.ID, j.path, err)
	}
	r.Bound()
	line, err := encodeJournalLine(r)
	if err != nil {
		return fmt.Errorf("append result %s to %s: %w", r.ID, j.path, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return fmt.Errorf("append result %s to %s: %w", r.ID, j.path, os.ErrClosed)
	}
	if j.err != nil {
		return fmt.Errorf("append result %s: %w", r.ID, j.err)
	}
	j.pending = append(j.pending, line...)
	batch := j.started + 1 // the batch that will take pending
	for j.synced < batch {
		if j.writing {
			j.cond.Wait()
			continue
		}
		// Lead the next batch: write what is pending, unlocked.
		buf := j.pending
		j.pending = nil
		j.started++
		n := j.started
		j.writing = true
		j.mu.Unlock()
		err := j.write(buf)
		j.mu.Lock()
		j.writing = false
		j.synced = n
		if err != nil && j.err == nil {
			j.err = err
		}
		j.cond.Broadcast()
	}
	if j.err != nil {
		return fmt.Errorf("append result %s: %w", r.ID, j.err)
	}
	return nil
}

// write writes and fsyncs one batch of lines. Errors name the journal,
// not the temporary name it was created under (the file's own name).
func (j *Journal) write(buf []byte) error {
	if _, err := j.f.Write(buf); err != nil {
		return fmt.Errorf("write journal %s: %w", j.path, j.renamed(err))
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync journal %s: %w", j.path, j.renamed(err))
	}
	return nil
}

// renamed returns err with the path of its *fs.PathError set to the
// journal's, so that a disk-full error names the journal the operator
// looks for.
func (j *Journal) renamed(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: j.path, Err: pe.Err}
	}
	return err
}

// Close closes the journal and releases its lock. Appends in flight
// finish first.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.writing {
		j.cond.Wait()
	}
	if j.closed {
		return nil
	}
	j.closed = true
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("close journal %s: %w", j.path, err)
	}
	return nil
}

// MaxJournalLine is the longest journal line read: a bounded result takes
// at most MaxRecordedBytes; a longer line (written before results were
// bounded, or damaged) is skipped with an error naming it.
const MaxJournalLine = 1 << 20

// encodeJournalLine returns r as one journal line with its checksum and
// newline.
func encodeJournalLine(r data.Result) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return durable.AppendLineCRC(b), nil
}

// decodeJournalLine returns the result of one journal line (without its
// newline), checking its checksum (see appendLineCRC).
func decodeJournalLine(row []byte) (data.Result, error) {
	var r data.Result
	if err := durable.CheckLineCRC(row); err != nil {
		return r, err
	}
	if err := json.Unmarshal(row, &r); err != nil {
		return r, err
	}
	if r.ID == "" || !r.Status.Valid() || r.Started.IsZero() {
		return r, errors.New("result without id, status or start time")
	}
	return r, nil
}

// ReadJournal reads every result of the journal at path. A line that does
// not parse, fails its checksum or is longer than MaxJournalLine is skipped
// and reported in bad, naming file:line, and the lines after it are still
// read. A last line without its newline is read like any other when it is
// whole (the newline alone was lost); one cut short by a crash is reported
// in bad too: its check never counted as done. err is non-nil only when
// the file cannot be read.
func ReadJournal(path string) (results []data.Result, bad []error, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read journal: %w", err)
	}
	bad = durable.ScanLines(path, b, MaxJournalLine, func(row []byte) error {
		r, err := decodeJournalLine(row)
		if err == nil {
			results = append(results, r)
		}
		return err
	})
	return results, bad, nil
}

// JournalFile is one journal found on disk.
type JournalFile struct {
	Path   string
	Active bool // a live process still holds its lock
}

// ListJournals returns the journals under dir sorted by name. With probe set,
// it tells which are still locked by a running process.
func ListJournals(dir string, probe bool) ([]JournalFile, error) {
	paths, err := data.Dir(dir).Journals()
	if err != nil {
		return nil, fmt.Errorf("list journals: %w", err)
	}
	out := make([]JournalFile, 0, len(paths))
	for _, p := range paths {
		jf := JournalFile{Path: p}
		if probe {
			active, err := JournalActive(p)
			if errors.Is(err, os.ErrNotExist) {
				continue // folded meanwhile
			}
			if err != nil {
				return nil, err
			}
			jf.Active = active
		}
		out = append(out, jf)
	}
	return out, nil
}

// JournalActive reports whether a process holds the journal's lock.
func JournalActive(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("probe journal: %w", err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("probe journal %s: %w", path, err)
	}
	// Our probe lock is released with f.Close.
	return false, nil
}
