package site

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/data"
)

// pauseChange is one line of the pause record: a server's checks paused
// or resumed, as the publish that first read it in the paused list saw it.
type pauseChange struct {
	ID     string `json:"id"`
	Paused bool   `json:"paused"`
	At     int64  `json:"at"` // Unix ms: the time of that publish (its -at)
}

// pausesPath returns the pause record, DATA/site/pauses.jsonl. A pause is
// the one status the Parquet history cannot tell; the record is what a
// rebuild takes its start and end from, so that a rebuilt site says what
// the incremental runs said. It is not in state.bin: a damaged record of
// the site must not move the pauses it rebuilds.
func pausesPath(dataDir string) string { return filepath.Join(dataDir, "site", "pauses.jsonl") }

// readPauses reads the pause record, by server id, oldest first. A line
// that does not parse (a torn last line) is skipped and reported.
func readPauses(dataDir string) (map[string][]pauseChange, []error, error) {
	b, err := os.ReadFile(pausesPath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]pauseChange{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read pause record: %w", err)
	}
	out := map[string][]pauseChange{}
	var bad []error
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var c pauseChange
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.ID == "" {
			bad = append(bad, fmt.Errorf("%s:%d: bad pause record line: %q", pausesPath(dataDir), line, sc.Bytes()))
			continue
		}
		out[c.ID] = append(out[c.ID], c)
	}
	return out, bad, nil
}

// appendPauses appends changes to the pause record, fsynced.
func appendPauses(dataDir string, changes []pauseChange) error {
	if len(changes) == 0 {
		return nil
	}
	var b []byte
	for _, c := range changes {
		line, err := json.Marshal(c)
		if err != nil {
			return err
		}
		b = append(append(b, line...), '\n')
	}
	f, err := os.OpenFile(pausesPath(dataDir), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("write pause record: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write pause record %s: %w", pausesPath(dataDir), err)
	}
	return nil
}

// recordPauses reads the pause record and appends a change, at now, for
// every listed server whose paused state is not the record's last.
func (p *publication) recordPauses() error {
	pauses, bad, err := readPauses(p.cfg.DataDir)
	if err != nil {
		return err
	}
	for _, b := range bad {
		p.bad(b)
	}
	var changes []pauseChange
	for _, r := range p.st.Rows {
		cs := pauses[r.ID]
		if paused := len(cs) > 0 && cs[len(cs)-1].Paused; paused != r.Paused {
			c := pauseChange{ID: r.ID, Paused: r.Paused, At: p.now.UnixMilli()}
			if r.Paused && len(cs) == 0 {
				// Paused before there was a record: since when its file says.
				if at, ok := p.publishedPauseStart(r.ID); ok {
					c.At = at
				}
			}
			changes = append(changes, c)
			pauses[r.ID] = append(cs, c)
		}
	}
	p.pauses = pauses
	return appendPauses(p.cfg.DataDir, changes)
}

// publishedPauseStart returns the start of the pause the published file
// of id shows as lasting, if it does.
func (p *publication) publishedPauseStart(id string) (int64, bool) {
	b, err := os.ReadFile(filepath.Join(p.cfg.OutDir, "servers", filepath.FromSlash(id)+".json"))
	if err != nil {
		return 0, false
	}
	var f struct {
		Incidents []Incident `json:"incidents"`
	}
	if json.Unmarshal(b, &f) != nil || len(f.Incidents) == 0 {
		return 0, false
	}
	if last := f.Incidents[0]; last.Status == data.Paused && last.End == nil {
		return last.Start.UnixMilli(), true
	}
	return 0, false
}

// applyPauses sets the pauses of s from the record: every recorded change
// when s is new (a rebuild, or its file was lost), then the current one at
// the time it was recorded.
func (s *summary) applyPauses(changes []pauseChange, paused, fresh bool, now time.Time) {
	if fresh {
		for _, c := range changes {
			s.setPaused(c.Paused, time.UnixMilli(c.At))
		}
	}
	if n := len(changes); n > 0 && changes[n-1].Paused == paused {
		now = time.UnixMilli(changes[n-1].At)
	}
	s.setPaused(paused, now)
}
