package record

import (
	"bytes"
	"slices"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// ToolChangesLen is how many tool-definition changes a server's file keeps,
// newest first.
const ToolChangesLen = 50

// ToolDefinitions is what a server's file says of the tool definitions its
// checks listed: their fingerprint, and when and how they changed.
type ToolDefinitions struct {
	Hash      *string      `json:"hash"`       // SHA-256 of the canonical definitions of the last check that listed tools; null when none did
	Seen      *Time        `json:"seen"`       // start of that check
	ChangedAt *Time        `json:"changed_at"` // start of the first check that listed the current definitions after others; null: never changed
	Changes   []ToolChange `json:"changes"`    // newest first, at most ToolChangesLen
}

// ToolChange is one change of a server's tool definitions between two
// checks that listed them.
type ToolChange struct {
	At      Time              `json:"at"`        // start of the check that listed the new definitions
	From    string            `json:"from_hash"` // fingerprint before
	To      string            `json:"to_hash"`   // fingerprint after
	Details bool              `json:"details"`   // both sets were stored, so added, removed and changed are known
	Added   []string          `json:"added"`     // tools listed now, not before
	Removed []string          `json:"removed"`   // tools listed before, not now
	Changed []ToolFieldChange `json:"changed"`   // tools listed both times whose definition changed
}

// ToolFieldChange names the fields of one tool's definition that changed:
// "description", "inputSchema", "annotations".
type ToolFieldChange struct {
	Name   string   `json:"name"`
	Fields []string `json:"fields"`
}

// ApplyTools records a change of definitions when r, newer than the last
// check that listed tools, lists others. read returns a stored set (see
// spool.ReadToolDefs); a set it cannot return leaves the change without
// details.
func (s *Summary) ApplyTools(r data.Result, read func(hash string) ([]spool.ToolDef, error)) {
	t := &s.Tools
	// At the history's precision: a result read from a journal not folded
	// yet carries nanoseconds, the same read from Parquet milliseconds.
	at := TruncMS(r.Started)
	if r.ToolsHash == "" || (t.Seen != nil && !at.After(t.Seen.Time)) {
		return
	}
	if old := ValueOf(t.Hash); old != "" && old != r.ToolsHash {
		c := ToolChange{At: Time{at}, From: old, To: r.ToolsHash, Added: []string{}, Removed: []string{}, Changed: []ToolFieldChange{}}
		before, err1 := read(old)
		after, err2 := read(r.ToolsHash)
		if err1 == nil && err2 == nil {
			c.Details = true
			c.Added, c.Removed, c.Changed = diffTools(before, after)
		}
		t.Changes = slices.Insert(t.Changes, 0, c)
		t.Changes = t.Changes[:min(len(t.Changes), ToolChangesLen)]
		t.ChangedAt = TimePtr(at)
	}
	t.Hash, t.Seen = orNull(r.ToolsHash), TimePtr(at)
}

// diffTools compares two definition sets by tool name.
func diffTools(before, after []spool.ToolDef) (added, removed []string, changed []ToolFieldChange) {
	old := make(map[string]spool.ToolDef, len(before))
	for _, d := range before {
		old[d.Name] = d
	}
	added, removed, changed = []string{}, []string{}, []ToolFieldChange{}
	now := make(map[string]bool, len(after))
	for _, d := range after {
		now[d.Name] = true
		o, ok := old[d.Name]
		if !ok {
			added = append(added, d.Name)
			continue
		}
		var fields []string
		if o.Description != d.Description {
			fields = append(fields, "description")
		}
		if !bytes.Equal(o.InputSchema, d.InputSchema) {
			fields = append(fields, "inputSchema")
		}
		if !bytes.Equal(o.Annotations, d.Annotations) {
			fields = append(fields, "annotations")
		}
		if len(fields) > 0 {
			changed = append(changed, ToolFieldChange{Name: d.Name, Fields: fields})
		}
	}
	for _, d := range before {
		if !now[d.Name] {
			removed = append(removed, d.Name)
		}
	}
	return added, removed, changed
}
