package site

import (
	"encoding/json"
	"os"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/site/record"
)

// recordPauses reads the pause record (lists.ReadPauseRecord) and appends a
// change, at now, for every listed server whose paused state is not the
// record's last: before any server is rendered, so that the files
// published and the record agree.
func (p *publication) recordPauses() error {
	pauses, bad, err := lists.ReadPauseRecord(p.cfg.DataDir)
	if err != nil {
		return err
	}
	for _, b := range bad {
		p.bad(b)
	}
	var changes []lists.PauseChange
	for _, r := range p.st.Rows {
		cs := pauses[r.ID]
		if paused := len(cs) > 0 && cs[len(cs)-1].Paused; paused != r.Paused {
			c := lists.PauseChange{ID: r.ID, Paused: r.Paused, At: record.TruncMS(p.now)}
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
	return lists.AppendPauseRecord(p.cfg.DataDir, changes)
}

// publishedPauseStart returns the start of the pause the published file
// of id shows as lasting, if it does.
func (p *publication) publishedPauseStart(id string) (time.Time, bool) {
	b, err := os.ReadFile(p.serverFile(id))
	if err != nil {
		return time.Time{}, false
	}
	var f struct {
		Incidents []record.Incident `json:"incidents"`
	}
	if json.Unmarshal(b, &f) != nil || len(f.Incidents) == 0 {
		return time.Time{}, false
	}
	if last := f.Incidents[0]; last.Status == data.Paused && last.End == nil {
		return last.Start.Time, true
	}
	return time.Time{}, false
}
