package site

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A server's published file is its record (loadSummary): its checks, its
// daily series, its status changes. One that went missing or no longer
// decodes (a site build cleaned the output, a disk returned garbage) is
// not started afresh, which would publish a checked server as never
// checked and drop what it showed: the server is left as it was published
// (its row, its pending results carried to the next publish), and the
// next publish rebuilds the site from the history, which holds every
// check the record was made of.

// errRecordLost is the error of a server whose record is missing or
// damaged.
var errRecordLost = errors.New("the next publish rebuilds the site from the history")

// rebuildPath is the request for a rebuild a publish that found a record
// lost leaves to the next: the records lost, a line each.
func rebuildPath(dataDir string) string { return filepath.Join(dataDir, "site", "rebuild") }

// lostRecordsRead is how many of the servers' published files a publish
// looks for beyond those it renders, a window that moves with the minute,
// so that a file deleted from the output is found without waiting for its
// server's next check: every file of 25,000 servers within some 25
// minutes, of a million within some 17 hours. A stat each.
const lostRecordsRead = 1024

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

// recordLost is the error of the server id whose published file at path
// is missing (err os.ErrNotExist) or does not decode.
func recordLost(id, path string, err error) error {
	what := "is damaged: " + err.Error()
	if errors.Is(err, os.ErrNotExist) {
		what = "is missing"
	}
	return fmt.Errorf("record of %s: %s %s; %w", id, path, what, errRecordLost)
}

// findLost makes candidates of the checked servers, in this minute's
// window of lostRecordsRead rows, whose published file is missing: their
// render finds the record lost.
func (p *publication) findLost() {
	rows := p.st.Rows
	n := min(p.cfg.lostRead, len(rows))
	if n == 0 {
		n = min(lostRecordsRead, len(rows))
	}
	if n == 0 {
		return
	}
	start := int(p.now.Unix() / 60 * int64(n) % int64(len(rows)))
	for j := range n {
		r := &rows[(start+j)%len(rows)]
		if r.LastCheck == 0 || p.cand[r.ID] {
			continue
		}
		if _, err := os.Stat(p.serverFile(r.ID)); errors.Is(err, os.ErrNotExist) {
			p.cand[r.ID] = true
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
