package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"plug.directory/prober/data"
)

// startLogKeep is how long a host's last start is remembered. Only the last
// data.HostMinSpacing matters; the rest is margin for clocks that step.
const startLogKeep = time.Minute

// startLogCompactSize is the log size past which the next start rewrites it
// with only the starts of the last startLogKeep.
const startLogCompactSize = 1 << 20

// startLog is the record, shared by every run on the machine, of the last
// actual start of a check per host (rule S9). Overlapping runs (the previous
// minute's run still starting late checks, a run started late) all consult
// it before they start a check, so the 1 s spacing holds on actual start
// times, not only in the plan.
//
// It is an append-only log, DIR/run/hosts.log, one "host unixnano" a line,
// read and appended only under an exclusive flock on DIR/run/hosts.lock.
// Each process keeps what it has read and reads only what others appended
// since, so a start costs a lock, a stat, a short read and a short write.
// Past startLogCompactSize the log is rewritten with its recent lines and
// renamed over; the others notice the new file and read it afresh. It is
// not fsynced: after a machine crash more than a second has passed anyway.
type startLog struct {
	mu    sync.Mutex // one flock holder per process; flock serialises processes
	lock  *os.File
	path  string
	clock Clock

	compactAt int64 // log size that triggers a compaction: startLogCompactSize

	log  *os.File // the log as last opened
	ino  uint64   // its inode, to notice a compaction by another process
	off  int64    // bytes of it read
	torn bool     // it ends without a newline: a writer died mid-line
	last map[string]time.Time
	buf  []byte
}

// openStartLog opens the start log of the data directory dir.
func openStartLog(dir string, clock Clock) (*startLog, error) {
	rdir := filepath.Join(dir, "run")
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return nil, fmt.Errorf("open host start log: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(rdir, "hosts.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open host start log: %w", err)
	}
	return &startLog{lock: f, path: filepath.Join(rdir, "hosts.log"), clock: clock, last: map[string]time.Time{}, compactAt: startLogCompactSize}, nil
}

// close releases the start log's files.
func (l *startLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.log != nil {
		l.log.Close()
	}
	return l.lock.Close()
}

// tryStart decides, under the lock, whether a check of host may start now.
// When the host's last start is at least data.HostMinSpacing ago, it records
// now as the host's start and returns it with ok true; the caller must start
// the check at once. Otherwise it returns ok false and the earliest time to
// ask again. The time is read under the lock, so the recorded starts of one
// host are in the order they were granted.
func (l *startLog) tryStart(host string) (ok bool, at time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := syscall.Flock(int(l.lock.Fd()), syscall.LOCK_EX); err != nil {
		return false, time.Time{}, fmt.Errorf("lock host start log: %w", err)
	}
	defer syscall.Flock(int(l.lock.Fd()), syscall.LOCK_UN)

	if err := l.catchUp(); err != nil {
		return false, time.Time{}, err
	}
	now := l.clock.Now()
	if prev, seen := l.last[host]; seen {
		if next := prev.Add(data.HostMinSpacing); now.Before(next) {
			return false, next, nil
		}
	}
	if err := l.append(host, now); err != nil {
		return false, time.Time{}, err
	}
	return true, now, nil
}

// catchUp reads what other processes appended since the last call, or the
// whole log when it was replaced.
func (l *startLog) catchUp() error {
	fi, err := os.Stat(l.path)
	if os.IsNotExist(err) {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open host start log: %w", err)
		}
		if fi, err = f.Stat(); err != nil {
			f.Close()
			return fmt.Errorf("open host start log: %w", err)
		}
		f.Close()
	} else if err != nil {
		return fmt.Errorf("read host start log: %w", err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	if l.log == nil || ino != l.ino {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open host start log: %w", err)
		}
		if l.log != nil {
			l.log.Close()
		}
		l.log, l.ino, l.off, l.torn = f, ino, 0, false
	}
	if fi.Size() <= l.off {
		return nil
	}
	buf := make([]byte, fi.Size()-l.off)
	n, err := l.log.ReadAt(buf, l.off)
	if err != nil && err != io.EOF {
		return fmt.Errorf("read host start log: %w", err)
	}
	buf = buf[:n]
	l.off += int64(n)
	l.torn = n > 0 && buf[n-1] != '\n'
	for len(buf) > 0 {
		line := buf
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			line, buf = buf[:i], buf[i+1:]
		} else {
			buf = nil
		}
		l.parse(line)
	}
	return nil
}

// parse takes one "host unixnano" line. A line that does not parse (a
// writer killed mid-line) is skipped: an entry lost costs at most one
// second of spacing on one host.
func (l *startLog) parse(line []byte) {
	i := bytes.LastIndexByte(line, ' ')
	if i <= 0 {
		return
	}
	n, err := strconv.ParseInt(string(line[i+1:]), 10, 64)
	if err != nil {
		return
	}
	host := string(line[:i])
	if t := time.Unix(0, n); t.After(l.last[host]) {
		l.last[host] = t
	}
}

// append records a start, compacting the log first when it has grown.
func (l *startLog) append(host string, at time.Time) error {
	if l.off >= l.compactAt {
		if err := l.compact(at.Add(-startLogKeep)); err != nil {
			return err
		}
	}
	l.buf = l.buf[:0]
	if l.torn {
		l.buf = append(l.buf, '\n')
	}
	l.buf = append(l.buf, host...)
	l.buf = append(l.buf, ' ')
	l.buf = strconv.AppendInt(l.buf, at.UnixNano(), 10)
	l.buf = append(l.buf, '\n')
	n, err := l.log.Write(l.buf)
	if err != nil {
		return fmt.Errorf("write host start log: %w", err)
	}
	l.off += int64(n)
	l.torn = false
	l.last[host] = at
	return nil
}

// compact replaces the log with the starts after since.
func (l *startLog) compact(since time.Time) error {
	var b bytes.Buffer
	for host, t := range l.last {
		if t.Before(since) {
			delete(l.last, host)
			continue
		}
		fmt.Fprintf(&b, "%s %d\n", host, t.UnixNano())
	}
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("compact host start log: %w", err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		return fmt.Errorf("compact host start log: %w", err)
	}
	l.ino = 0 // reopen below
	return l.catchUp()
}
