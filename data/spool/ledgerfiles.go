package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// The ledger's two files (data.Dir.Ledger, the base, and LedgerDelta) are
// written base first, each replaced atomically and fsynced, so that a
// write stopped at any point leaves the ledger before it or after it:
//
//   - a plan that keeps the servers of the base writes only the delta;
//   - one that changes them, or whose delta would pass deltaLimit, or of a
//     ledger not read from the base on disk (rebuilt, of another
//     directory), writes a base numbered one more than the one on disk,
//     then removes the delta, which names an older base: until it is gone
//     it is read as nothing;
//   - over a base of version 4, or none, a delta left is of no base the
//     ledger has: it is removed first.
//
// Readers that do not hold the plans' lock (the site, the metrics) may
// read while a plan writes: ReadLedger reads again when the base was
// replaced while it read the delta.

// ledgerReads is how many times ReadLedger reads a ledger replaced under
// it before giving up: one plan a minute replaces the base at most once.
const ledgerReads = 4

// betweenReads is called between the reads of the base and the delta: a
// test replaces the ledger there, as a plan may.
var betweenReads = func() {}

// ReadLedger reads the ledger of the data directory dir. A missing ledger is
// an empty one (nothing planned yet); a damaged one is an error wrapping
// ErrLedgerCorrupt, since planning without it could double-book hosts.
func ReadLedger(dir string) (*Ledger, error) {
	f, err := readLedgerFiles(data.Dir(dir))
	if err != nil {
		return nil, err
	}
	if f == nil {
		return NewLedger(), nil
	}
	return f.decode()
}

// EachLedgerServer calls each with the record of every server of the
// ledger of the data directory dir, in the ledger's order, as ReadLedger
// returns them, and returns ReadLedger's errors; a record passed to each
// is valid only during the call. It decodes neither the records into one
// slice nor the hosts' starts: a reader that needs only the servers' next
// checks (the site, every minute) spends a fraction of the memory. On an
// error each may have been called for some records, not all. It returns
// the mark of the base read, for EachLedgerChange; the zero mark when there
// is none of version 5.
func EachLedgerServer(dir string, each func(s *LedgerServer)) (LedgerMark, error) {
	f, err := readLedgerFiles(data.Dir(dir))
	if err != nil || f == nil {
		return LedgerMark{}, err
	}
	if !isBase(f.text) {
		l, err := f.decode()
		if err != nil {
			return LedgerMark{}, err
		}
		for i := range l.Servers {
			each(&l.Servers[i])
		}
		return LedgerMark{}, nil
	}
	b, err := checkBase(f.text, f.sum)
	if err != nil {
		return LedgerMark{}, fmt.Errorf("read ledger %s: %w", f.path, err)
	}
	// The delta's records, in ascending order of index, as servers asks
	// for the payloads: each is found in step.
	var changed []int
	var payloads []string
	if f.hasDelta {
		_, err := deltaRecords(f.delta, f.dsum, b, func(i int, p string) bool {
			changed, payloads = append(changed, i), append(payloads, p)
			return true
		})
		if err != nil {
			return LedgerMark{}, fmt.Errorf("read ledger %s: %w", f.deltaPath, err)
		}
	}
	payload := func(i int) string {
		if len(changed) > 0 && changed[0] == i {
			p := payloads[0]
			changed, payloads = changed[1:], payloads[1:]
			return p
		}
		return b.payload(i)
	}
	if err := b.servers(0, b.n, payload, func(_ int, s *LedgerServer) { each(s) }); err != nil {
		return LedgerMark{}, fmt.Errorf("read ledger %s: %w", f.path, err)
	}
	return b.mark(), nil
}

// LedgerMark names a base of the ledger: its number, its checksum and its
// servers. A reader that read the ledger whole keeps it to read, the next
// time, only what changed since (EachLedgerChange).
type LedgerMark struct {
	Seq     uint64 `json:"seq"`
	Sum     uint32 `json:"sum"`
	Servers int    `json:"servers"`
}

func (b *ledgerBase) mark() LedgerMark { return LedgerMark{Seq: b.seq, Sum: b.sum(), Servers: b.n} }

// EachLedgerChange calls each with the index and the record (its ID
// left empty) of every server the ledger's delta holds, when the ledger's
// base is still the one mark names, and reports whether it is: every
// record that changed since the base is in the delta (a delta keeps the
// records of the one it replaces), so a reader that applied the ledger
// at mark and each delta since applies this one alone. Records are passed
// in ascending order of index, each valid only during the call. Not ok,
// with each not called, when the base is another or none: the caller
// reads the whole ledger (EachLedgerServer). A damaged delta is an error.
func EachLedgerChange(dir string, mark LedgerMark, each func(i int, s *LedgerServer)) (ok bool, err error) {
	d := data.Dir(dir)
	return readAgainIfReplaced(d, func() (bool, bool, error) { return eachChangeOnce(d, mark, each) })
}

// eachChangeOnce is EachLedgerChange of the base at hand; replaced reports
// that it was replaced while the delta was read (each not called).
func eachChangeOnce(d data.Dir, mark LedgerMark, each func(i int, s *LedgerServer)) (ok, replaced bool, err error) {
	path := d.Ledger()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read ledger: %w", err)
	}
	defer f.Close()
	fi, head, tail := peekBaseFile(f)
	if head == "" || fi == nil {
		return false, false, nil
	}
	// Its number, checksum and servers are all a delta is checked
	// against: the rest of the base is not read.
	b := &ledgerBase{text: head + tail, seq: le64(head, len(ledgerMagicV5)), n: int(le32(head, len(ledgerMagicV5)+3*8))}
	if b.mark() != mark {
		return false, false, nil
	}
	betweenReads()
	delta, dsum, derr := durable.ReadSummed(d.LedgerDelta())
	if now, err := os.Stat(path); err != nil || !os.SameFile(fi, now) {
		return false, true, nil
	}
	if errors.Is(derr, os.ErrNotExist) {
		return true, false, nil // nothing changed since the base
	}
	if derr != nil {
		return false, false, fmt.Errorf("read ledger: %w", derr)
	}
	// A delta of the base before is passed over: the base holds it all.
	var s LedgerServer
	if _, err := deltaRecords(delta, dsum, b, func(i int, p string) bool {
		if !decodePayload(&s, p) {
			return false
		}
		each(i, &s)
		return true
	}); err != nil {
		return false, false, fmt.Errorf("read ledger %s: %w", d.LedgerDelta(), err)
	}
	return true, false, nil
}

// ledgerFiles is a ledger's base and delta as read, with their CRC-32C.
type ledgerFiles struct {
	path, deltaPath string
	text, delta     string
	sum, dsum       uint32
	hasDelta        bool
}

// readLedgerFiles reads the base and the delta of the ledger of d, again
// when the base was replaced while it read them: nil when there is none.
func readLedgerFiles(d data.Dir) (*ledgerFiles, error) {
	return readAgainIfReplaced(d, func() (*ledgerFiles, bool, error) { return readLedgerOnce(d) })
}

// readAgainIfReplaced calls once, a read of the ledger of d that reports
// whether its base was replaced meanwhile, until it was not, at most
// ledgerReads times.
func readAgainIfReplaced[T any](d data.Dir, once func() (v T, replaced bool, err error)) (T, error) {
	for range ledgerReads {
		v, replaced, err := once()
		if !replaced {
			return v, err
		}
	}
	var zero T
	return zero, fmt.Errorf("read ledger %s: replaced %d times while it was read", d.Ledger(), ledgerReads)
}

// decode decodes the files read into a ledger.
func (f *ledgerFiles) decode() (*Ledger, error) {
	l := NewLedger()
	if err := l.decodeFile(f.text, f.sum); err != nil {
		return nil, fmt.Errorf("read ledger %s: %w", f.path, err)
	}
	if f.hasDelta {
		if err := l.applyDelta(f.delta, f.dsum); err != nil {
			return nil, fmt.Errorf("read ledger %s: %w", f.deltaPath, err)
		}
	}
	return l, nil
}

// readLedgerOnce reads the base and the delta; replaced reports that the
// base was replaced after it was read, so the delta read may be of another.
func readLedgerOnce(d data.Dir) (lf *ledgerFiles, replaced bool, err error) {
	path := d.Ledger()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(d.LedgerDelta()); err == nil {
			return nil, false, fmt.Errorf("read ledger %s: %w: a delta without its base", path, ErrLedgerCorrupt)
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read ledger: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("read ledger: %w", err)
	}
	lf = &ledgerFiles{path: path, deltaPath: d.LedgerDelta()}
	if lf.text, lf.sum, err = durable.ReadSummedFile(f); err != nil {
		return nil, false, fmt.Errorf("read ledger: %w", err)
	}
	betweenReads()
	delta, dsum, derr := durable.ReadSummed(lf.deltaPath)
	if now, err := os.Stat(path); err != nil || !os.SameFile(fi, now) {
		return nil, true, nil
	}
	if derr != nil && !errors.Is(derr, os.ErrNotExist) {
		return nil, false, fmt.Errorf("read ledger: %w", derr)
	}
	lf.delta, lf.dsum, lf.hasDelta = delta, dsum, derr == nil
	return lf, false, nil
}

// WriteLedger writes the ledger of the data directory dir, crash-safe:
// only what changed since the base when it can.
func WriteLedger(dir string, l *Ledger) error { return writeLedger(durable.Files{}, data.Dir(dir), l) }

// writeLedger is WriteLedger by the file system calls of fs.
func writeLedger(fs durable.Files, d data.Dir, l *Ledger) error {
	head, tail := peekBase(d.Ledger())
	seq := uint64(0)
	if head != "" {
		seq = le64(head, len(ledgerMagicV5))
	}
	if b := l.base; b != nil && head == b.text[:baseHeader] && tail == b.text[len(b.text)-4:] {
		// The records of the delta on disk stay in the next, changed or
		// not. One that cannot be read is written over by a new base.
		if held, err := deltaIndexes(d.LedgerDelta(), b); err == nil {
			delta, ok, err := b.delta(l, held)
			if err != nil {
				return err
			}
			if ok && len(delta) <= deltaLimit(len(b.text)) {
				return fs.WriteFileAtomic(d.LedgerDelta(), delta, 0o644)
			}
		}
	}
	if head == "" {
		// No base of version 5: a delta is of none the ledger has, and
		// is read as nothing, or as damage when no base is left.
		if err := fs.RemoveFile(d.LedgerDelta()); err != nil {
			return fmt.Errorf("write ledger: %w", err)
		}
	}
	if l.base != nil {
		seq = max(seq, l.base.seq)
	}
	b, err := l.encodeBase(seq + 1)
	if err != nil {
		return err
	}
	if err := fs.WriteFileAtomic(d.Ledger(), b, 0o644); err != nil {
		return err
	}
	if err := fs.RemoveFile(d.LedgerDelta()); err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	l.base, err = parseBase(string(b))
	return err
}

// peekBase returns the header and the checksum of the base file at path,
// "" when it holds no base of version 5. A delta names the base they
// number and sum.
func peekBase(path string) (head, tail string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	_, head, tail = peekBaseFile(f)
	return head, tail
}

// peekBaseFile is peekBase of an open file, which it returns the
// information of too.
func peekBaseFile(f *os.File) (fi os.FileInfo, head, tail string) {
	fi, err := f.Stat()
	h, t := make([]byte, baseHeader), make([]byte, 4)
	if err != nil || fi.Size() < int64(baseHeader+4) {
		return nil, "", ""
	}
	if _, err := f.ReadAt(h, 0); err != nil || string(h[:len(ledgerMagicV5)]) != ledgerMagicV5 {
		return nil, "", ""
	}
	if _, err := f.ReadAt(t, fi.Size()-4); err != nil {
		return nil, "", ""
	}
	return fi, string(h), string(t)
}

// KeepLedgerAside renames the ledger's files of the data directory dir
// that exist, the base first, adding suffix to their names, so that a
// damaged ledger can be looked at while a new one is made. A delta left
// without its base (stopped in between) is damage too: the next read
// finds it, and this moves it. Of the copies kept so, the last
// ledgerAsideKeep of each file stay (suffixes sort by time): the older go.
func KeepLedgerAside(dir, suffix string) (aside []string, err error) {
	for _, path := range []string{data.Dir(dir).Ledger(), data.Dir(dir).LedgerDelta()} {
		err := os.Rename(path, path+suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return aside, fmt.Errorf("keep ledger aside: %w", err)
		}
		aside = append(aside, path+suffix)
		old, _ := filepath.Glob(path + ".*")
		slices.Sort(old)
		for _, p := range old[:max(len(old)-ledgerAsideKeep, 0)] {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return aside, fmt.Errorf("keep ledger aside: %w", err)
			}
		}
	}
	return aside, nil
}

// ledgerAsideKeep is how many damaged copies of each ledger file
// KeepLedgerAside keeps.
const ledgerAsideKeep = 3
