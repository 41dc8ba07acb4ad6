package site

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"plug.directory/prober/internal/durable"
)

// A server's published file is its record (loadSummary): its checks, its
// daily series, its status changes. One that went missing or no longer
// decodes (a site build cleaned the output, a disk returned garbage) is
// not started afresh, which would publish a checked server as never
// checked and drop what it showed: the server is left as it was published
// (its row, its pending results carried to the next publish), and the
// next publish rebuilds the site from the history, which holds every
// check the record was made of. A server's other files (its page, strip,
// badges, feed) are written when they change: one missing is found by
// the window of files each publish looks for (findLost) and written
// again.

// errRecordLost is the error of a server whose record is missing or
// damaged.
var errRecordLost = errors.New("the next publish rebuilds the site from the history")

// rebuildPath is the request for a rebuild a publish that found a record
// lost leaves to the next: the records lost, a line each.
func rebuildPath(dataDir string) string { return filepath.Join(dataDir, "site", "rebuild") }

// filesLookedFor is how many servers' files a publish looks for beyond
// those of the servers it renders, a window that moves with the minute,
// so that a file deleted from the output (a site build cleaned it) is
// found and written again without waiting for its server's next change:
// every file of 25,000 servers within some 100 minutes, of a million
// within some 3 days. Eight stats a server.
const filesLookedFor = 256

// window returns the first of the n of all things (rows, parts) a
// publish at now looks at, from where the last minute's stopped.
func window(now time.Time, n, all int) int { return int(now.Unix() / 60 * int64(n) % int64(all)) }

// rebuildRequested returns why the last publish asked for a rebuild, ""
// when it did not.
func rebuildRequested(dataDir string) (string, error) {
	b, err := os.ReadFile(rebuildPath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read rebuild request: %w", err)
	}
	why := strings.TrimSpace(string(b))
	if why == "" {
		why = "a request without its reason"
	}
	return why, nil
}

// undecodable is the error of a server's record (its published file, its
// older checks, its file from before it was retired) that does not
// decode: not JSON, or JSON that does not read as a record (an unknown
// status, a time that does not parse, a daily series out of order), as a
// byte changed on disk or by another program leaves it. Every such file
// is a record lost, whatever the decoder's error: one it kept failing on
// would hold its server unpublished for good.
type undecodable struct {
	path string
	err  error
}

func (e *undecodable) Error() string { return "read " + e.path + ": " + e.err.Error() }
func (e *undecodable) Unwrap() error { return e.err }

// recordLost is the error of the server id whose published file at path
// is missing (err os.ErrNotExist) or does not decode.
func recordLost(id, path string, err error) error {
	what := "is damaged: " + err.Error()
	if errors.Is(err, os.ErrNotExist) {
		what = "is missing"
	}
	return fmt.Errorf("record of %s: %s %s; %w", id, path, what, errRecordLost)
}

// findLost looks for the files of this minute's window of servers:
// one whose record is missing is made a candidate, whose render finds the
// record lost (or, never checked, writes it again from the lists); one
// missing another file is made a candidate to repair, all its files
// written again where they differ from what is there.
func (p *publication) findLost() {
	rows := p.st.n()
	n := p.cfg.lookFor
	if n == 0 {
		n = filesLookedFor
	}
	n = min(n, rows)
	if n == 0 {
		return
	}
	start := window(p.now, n, rows)
	// Each file is looked for in its directory opened once (os.Root): a
	// third less CPU than a stat of its whole path, 1,800 a minute. The
	// directory is named as the output's (serverFiles), not cut from a
	// path joined first.
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			if r != nil {
				r.Close()
			}
		}
	}()
	stat := func(dir, name string) error {
		r, ok := roots[dir]
		if !ok {
			r, _ = os.OpenRoot(filepath.Join(p.cfg.OutDir, dir)) // nil: stat the path itself
			roots[dir] = r
		}
		if r == nil {
			_, err := os.Stat(filepath.Join(p.cfg.OutDir, dir, name))
			return err
		}
		_, err := r.Stat(name)
		return err
	}
	for j := range n {
		id := p.st.idOf((start + j) % rows)
		if p.cand[id] {
			continue
		}
		sub, name := "", id // an id with slashes: its files are in a directory of their own
		if k := strings.LastIndexByte(id, '/'); k >= 0 {
			sub, name = filepath.FromSlash(id[:k]), id[k+1:]
		}
		for k, f := range serverFiles {
			if k == 1 && p.cfg.NoHTML {
				continue // no page
			}
			dir := f.dir
			if sub != "" {
				dir = filepath.Join(dir, sub)
			}
			if err := stat(dir, name+f.ext); !errors.Is(err, os.ErrNotExist) {
				continue
			}
			p.cand[id] = true
			if k > 0 {
				p.log.Warn("a server's file is missing; writing it again", "path", filepath.Join(p.cfg.OutDir, dir, name+f.ext))
				p.repair[id] = true
			}
			break
		}
	}
}

// requestRebuild leaves the next publish the request to rebuild the site
// when a server's record was found lost, naming each.
func (p *publication) requestRebuild() error {
	var lost []string
	for _, u := range p.stats.Unpublished {
		if errors.Is(u.Err, errRecordLost) {
			lost = append(lost, u.Err.Error())
		}
	}
	if len(lost) == 0 {
		return nil
	}
	p.log.Warn("a server's record is missing or damaged; the next publish rebuilds the site from the history", "servers", len(lost), "first", lost[0])
	return p.w.write(rebuildPath(p.cfg.DataDir), []byte(strings.Join(lost, "\n")+"\n"))
}

// stateDamaged leaves the next publish the request to rebuild the site
// when this one found damage in the site's record past reading it, in a
// block of rows' numbers it read for the rows it renders (storebase.go),
// and returns err saying so. Nothing it wrote is moved into place, and
// the results it read are read again by the rebuild, from the history,
// which holds every check the record was made of.
func (p *publication) stateDamaged(err error) error {
	err = fmt.Errorf("%w; the next publish rebuilds the site", err)
	if werr := durable.WriteFileAtomic(rebuildPath(p.cfg.DataDir), []byte(err.Error()+"\n"), 0o644); werr != nil {
		return errors.Join(err, fmt.Errorf("ask the next publish to rebuild: %w", werr))
	}
	return err
}
