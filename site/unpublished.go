package site

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/record"
)

// Unpublished is a server whose files one publish could not write or
// remove (a path taken by a directory, a permission): it costs that server
// only. The rest is published, the server keeps the files it had, and the
// next publish renders it again, with the results this one read for it
// (DATA/site/unpublished.jsonl: carryUnpublished).
type Unpublished struct {
	ID  string
	Err error
}

// unpublished records that the files of the server of row i could not be
// written: logged with its id, kept for Stats, status.json and the
// metrics, and its row due again at the next publish.
func (p *publication) unpublished(i int, id string, err error) {
	p.log.Error("server's files not written; the other servers are published", "id", id, "err", err)
	if i >= 0 {
		p.st.row(i).Expires = p.now.UnixMilli() // each row is its worker's own, decoded before it started
	}
	p.failMu.Lock()
	p.stats.Unpublished = append(p.stats.Unpublished, Unpublished{ID: id, Err: err})
	p.failMu.Unlock()
}

// unpublishedStatus returns the servers of Stats.Unpublished, sorted by id,
// as status.json says them: their reasons name no path outside the site's
// output and the data directory.
func (p *publication) unpublishedStatus() []record.UnpublishedServer {
	out := make([]record.UnpublishedServer, 0, len(p.stats.Unpublished))
	hide := strings.NewReplacer(p.cfg.OutDir+"/", "", p.cfg.DataDir+"/", "DATA/")
	for _, u := range p.stats.Unpublished {
		out = append(out, record.UnpublishedServer{ID: u.ID, Reason: hide.Replace(u.Err.Error())})
	}
	slices.SortFunc(out, func(a, b record.UnpublishedServer) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// carryLen is how many of its newest results a server that could not be
// published carries to the next publish: its history's length.
const carryLen = record.HistoryLen

// takeUnpublished reads the results the last publish could not publish and
// makes them pending again: a server whose files could not be written
// would otherwise lose them, its journals and parts being marked read. A
// result already applied is applied again harmlessly (Summary.Apply keeps
// one check per start). Lines that do not read are passed to bad.
func (p *publication) takeUnpublished() error {
	rs, bad, err := durable.ReadCRCLines[data.Result](data.Dir(p.cfg.DataDir).SiteUnpublished())
	for _, b := range bad {
		p.bad(b)
	}
	if err != nil {
		return fmt.Errorf("read unpublished results: %w", err)
	}
	for _, r := range rs {
		if r.Started.Before(p.oldest) || !p.hold(r) {
			continue
		}
		p.cand[r.ID] = true
	}
	return p.spillErr
}

// carryUnpublished replaces DATA/site/unpublished.jsonl with the newest
// carryLen pending results of each server this publish could not write,
// and removes it when there is none: staged, both, to happen just before
// the site's record moves (writer.flush), which reads past them.
func (p *publication) carryUnpublished() error {
	path := data.Dir(p.cfg.DataDir).SiteUnpublished()
	var b []byte
	for _, u := range p.stats.Unpublished {
		rs := slices.Clone(p.pending[u.ID])
		slices.SortFunc(rs, func(a, b data.Result) int { return a.Started.Compare(b.Started) })
		for _, r := range rs[max(0, len(rs)-carryLen):] {
			line, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("keep unpublished results of %s: %w", u.ID, err)
			}
			b = append(b, durable.AppendLineCRC(line)...)
		}
	}
	if len(b) == 0 {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		p.w.stageRemove(path)
		return nil
	}
	return p.w.stage(path, b)
}
