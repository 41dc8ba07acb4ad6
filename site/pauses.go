package site

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/site/record"
)

// recordPauses reads the pause record (lists.ReadPauseRecord) and appends a
// change, at now, for every listed server whose paused state is not the
// record's last: before any server is rendered, so that the files
// published and the record agree.
//
// A record with damaged lines is named once: kept aside in damaged/ and
// written again without them (a server paused now gets its pause back
// from its file, below; a pause that ended is lost to a rebuild).
func (p *publication) recordPauses() error {
	pauses, bad, err := lists.ReadPauseRecord(p.cfg.DataDir)
	if err != nil {
		return err
	}
	for _, b := range bad {
		p.bad(b)
	}
	// A row is compared when it is paused, or its record says it is: no
	// other can differ from its record, and a minute reads no id more.
	compare := p.st.pausedRows()
	for id, cs := range pauses {
		if len(cs) > 0 && cs[len(cs)-1].Paused {
			if i := p.st.find(id); i >= 0 {
				compare = append(compare, i)
			}
		}
	}
	slices.Sort(compare)
	var changes []lists.PauseChange
	for _, i := range slices.Compact(compare) {
		id, now := p.st.idOf(i), p.st.factsOf(i).paused
		cs := pauses[id]
		if paused := len(cs) > 0 && cs[len(cs)-1].Paused; paused != now {
			c := lists.PauseChange{ID: id, Paused: now, At: record.TruncMS(p.now)}
			if now && len(cs) == 0 {
				// Paused before there was a record: since when its file says.
				if at, ok := p.publishedPauseStart(id); ok {
					c.At = at
				}
			}
			changes = append(changes, c)
			pauses[id] = append(cs, c)
		}
	}
	p.pauses = pauses
	if len(bad) > 0 {
		err := p.rewritePauses(len(bad))
		if err == nil {
			return nil
		}
		p.bad(fmt.Errorf("write the pause record again without its damaged lines: %w", err)) // named again next time
	}
	return lists.AppendPauseRecord(p.cfg.DataDir, changes)
}

// rewritePauses keeps the pause record aside and writes it again from
// p.pauses, without the damaged lines it had.
func (p *publication) rewritePauses(damaged int) error {
	path := data.Dir(p.cfg.DataDir).PauseRecord()
	aside, err := history.KeepAside(p.cfg.DataDir, path, p.now)
	if err != nil {
		return err
	}
	var all []lists.PauseChange
	for _, id := range slices.Sorted(maps.Keys(p.pauses)) {
		all = append(all, p.pauses[id]...)
	}
	if err := lists.RewritePauseRecord(p.cfg.DataDir, all); err != nil {
		return err
	}
	p.log.Warn("the pause record had damaged lines; kept aside and written again without them", "damaged", damaged, "aside", aside, "changes", len(all))
	return nil
}

// publishedPauseStart returns the start of the pause the published file
// of id shows as lasting, if it does.
func (p *publication) publishedPauseStart(id string) (time.Time, bool) {
	in := p.publishedIncidents(id)
	if len(in) == 0 {
		return time.Time{}, false
	}
	if last := in[0]; last.Status == data.Paused && last.End == nil {
		return last.Start.Time, true
	}
	return time.Time{}, false
}

// publishedIncidents returns the status changes the published file of id
// shows (newest first), decoding nothing else of it; none when it does
// not read (its server's record is found lost when it is rendered).
func (p *publication) publishedIncidents(id string) []record.Incident {
	b, err := os.ReadFile(p.serverFile(id))
	if err != nil {
		return nil
	}
	var f struct {
		Incidents []record.Incident `json:"incidents"`
	}
	if json.Unmarshal(b, &f) != nil {
		return nil
	}
	return f.Incidents
}
