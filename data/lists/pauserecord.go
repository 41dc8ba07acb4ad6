package lists

import (
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// PauseChange is one line of the pause record: a server's checks paused
// or resumed, as the publish that first read it in the paused list saw it.
type PauseChange struct {
	ID     string    `json:"id"`
	Paused bool      `json:"paused"`
	At     time.Time `json:"at"` // the time of that publish (its -at)
}

// ReadPauseRecord reads the pause record, by server id, oldest first. A
// line that fails its checksum or does not decode is skipped and named in
// bad; a missing record holds none.
func ReadPauseRecord(dir string) (map[string][]PauseChange, []error, error) {
	all, bad, err := durable.ReadCRCLines[PauseChange](data.Dir(dir).PauseRecord())
	out := map[string][]PauseChange{}
	for _, c := range all {
		out[c.ID] = append(out[c.ID], c)
	}
	return out, bad, err
}

// RewritePauseRecord replaces the pause record with changes, atomically:
// a record written again without its damaged lines.
func RewritePauseRecord(dir string, changes []PauseChange) error {
	return durable.WriteCRCLines(data.Dir(dir).PauseRecord(), changes)
}

// AppendPauseRecord appends changes to the pause record, fsynced.
func AppendPauseRecord(dir string, changes []PauseChange) error {
	if len(changes) == 0 {
		return nil
	}
	return durable.AppendCRCLines(data.Dir(dir).PauseRecord(), changes)
}
