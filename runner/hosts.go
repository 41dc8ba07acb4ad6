package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"plug.directory/prober/data"
)

// ledgerKeep is how long a host's last start is remembered. Only the last
// data.HostMinSpacing matters; the rest is margin for clocks that step.
const ledgerKeep = time.Minute

// hostLedger is the record, shared by every run on the machine, of the last
// actual start of a check per host (rule S9). Overlapping runs (the previous
// minute's run still starting late checks, a run started late) all consult
// it before they start a check, so the 1 s spacing holds on actual start
// times, not only in the plan.
//
// The file DIR/run/hosts.txt holds one "host unixnano" a line and is replaced
// by rename under an exclusive flock on DIR/run/hosts.lock, so a process
// killed mid-update leaves the previous version. It is not fsynced: after a
// machine crash more than a second has passed anyway.
type hostLedger struct {
	mu    sync.Mutex // one flock holder per process; flock itself serialises processes
	lock  *os.File
	path  string
	clock Clock
}

// openLedger opens the ledger of the data directory dir.
func openLedger(dir string, clock Clock) (*hostLedger, error) {
	rdir := filepath.Join(dir, "run")
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		return nil, fmt.Errorf("open host ledger: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(rdir, "hosts.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open host ledger: %w", err)
	}
	return &hostLedger{lock: f, path: filepath.Join(rdir, "hosts.txt"), clock: clock}, nil
}

// close releases the ledger's lock file.
func (l *hostLedger) close() error { return l.lock.Close() }

// tryStart decides, under the lock, whether a check of host may start now.
// When the host's last start is at least data.HostMinSpacing ago, it records
// now as the host's start and returns it with ok true; the caller must start
// the check at once. Otherwise it returns ok false and the earliest time to
// ask again. The time is read under the lock, so the recorded starts of one
// host are in the order they were granted.
func (l *hostLedger) tryStart(host string) (ok bool, at time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := syscall.Flock(int(l.lock.Fd()), syscall.LOCK_EX); err != nil {
		return false, time.Time{}, fmt.Errorf("lock host ledger: %w", err)
	}
	defer syscall.Flock(int(l.lock.Fd()), syscall.LOCK_UN)

	last, err := readLedger(l.path)
	if err != nil {
		return false, time.Time{}, err
	}
	now := l.clock.Now()
	if prev, seen := last[host]; seen {
		if next := prev.Add(data.HostMinSpacing); now.Before(next) {
			return false, next, nil
		}
	}
	last[host] = now
	if err := writeLedger(l.path, last, now.Add(-ledgerKeep)); err != nil {
		return false, time.Time{}, err
	}
	return true, now, nil
}

// readLedger reads the last start per host. A missing file is empty; a line
// that does not parse (the file is never torn, but a person may edit it) is
// skipped: an entry lost costs at most one second of spacing.
func readLedger(path string) (map[string]time.Time, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]time.Time{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read host ledger: %w", err)
	}
	m := make(map[string]time.Time, bytes.Count(b, []byte{'\n'}))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		host, ns, found := strings.Cut(sc.Text(), " ")
		if !found {
			continue
		}
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			continue
		}
		if t := time.Unix(0, n); t.After(m[host]) {
			m[host] = t
		}
	}
	return m, nil
}

// writeLedger replaces the ledger with the starts after since.
func writeLedger(path string, last map[string]time.Time, since time.Time) error {
	var buf bytes.Buffer
	for host, t := range last {
		if t.Before(since) {
			continue
		}
		buf.WriteString(host)
		buf.WriteByte(' ')
		buf.WriteString(strconv.FormatInt(t.UnixNano(), 10))
		buf.WriteByte('\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write host ledger: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write host ledger: %w", err)
	}
	return nil
}
