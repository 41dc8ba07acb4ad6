package site

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site/badge"
	"plug.directory/prober/site/record"
)

// readLists reads the ranked list and the paused list when either changed
// since the last run, and brings the rows up to date: new servers, new
// ranks or addresses, pauses, and servers no longer listed.
func (p *publication) readLists() error {
	st := p.st
	// A list gone is read as one that cannot be read: the last good list
	// plan took stands (lists.ListGuard), as for plan.
	listSig, err := sigOf(p.cfg.ServersPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read ranked list: %w", err)
	}
	var pausedSig fileSig
	if p.cfg.PausedPath != "" {
		pausedSig, _ = sigOf(p.cfg.PausedPath)
	}
	if !p.stats.Rebuilt && !p.forceLists && listSig == st.Meta.List && pausedSig == st.Meta.Paused {
		p.stats.ListBadUnread = st.Meta.ListBad // still in the list, not read again
		return nil
	}
	// Every row is compared with the list's.
	if err := st.loadAll(); err != nil {
		return err
	}
	// Held to the last good list plan took: a list cut short unpublishes
	// no server.
	servers, bad, stale, err := lists.ListGuard{Dir: p.cfg.DataDir, ReadOnly: true}.Read(p.cfg.ServersPath)
	// Plan says the same rows too: whichever reads them first says them,
	// once a day while they stay (lists.ListRowsToSay); each still counts.
	sum := lists.SummarizeRows(p.cfg.ServersPath, servers, bad)
	say := lists.ListRowsToSay(p.cfg.DataDir, bad, sum, p.now)
	for _, b := range bad {
		if say {
			p.bad(b)
		} else {
			p.stats.Bad = append(p.stats.Bad, b)
		}
	}
	if say && sum != "" {
		p.log.Log(context.Background(), lists.SummaryLevel(bad), sum)
	}
	st.Meta.ListBad = len(bad)
	if err != nil {
		return err // an empty list would unpublish every server
	}
	if stale != nil {
		p.bad(stale)
		listSig = fileSig{} // read again next run
	}
	oldPaused := func(id string) bool {
		i := st.find(id)
		return i >= 0 && st.rows[i].Paused
	}
	paused := oldPaused
	if p.cfg.PausedPath != "" {
		list, err := lists.ReadPausedList(p.cfg.PausedPath)
		if err != nil {
			// Rule R2: a list that cannot be read resumes nothing; the
			// last good copy plan kept stands (a rebuilt record has no
			// pauses of its own to keep), else the pauses published
			// before; it is read again next run.
			p.bad(err)
			pausedSig = st.Meta.Paused
			if good, gerr := lists.ReadPausedList(data.Dir(p.cfg.DataDir).PausedLocalCopy()); gerr == nil {
				list, err = good, nil
			}
		}
		if err == nil {
			set, unmatched := list.Match(servers)
			for _, e := range unmatched {
				p.log.Info("paused list names no listed server", "file", list.Name, "line", e.Line, "entry", e.Value)
			}
			paused = func(id string) bool { return set[id] }
		}
	} else {
		paused = func(string) bool { return false }
	}
	p.servers = make(map[string]data.Server, len(servers))
	byID := make([]data.Server, 0, len(servers))
	for _, s := range servers { // ids that cannot name files are set aside by ReadServers
		p.servers[s.ID] = s
		byID = append(byID, s)
	}
	// A server's page names the others at its address: theirs are
	// rewritten on every change of the list. (One left alone by the others
	// leaving loses the names at its next check.)
	p.sharedWith = data.SharedAddresses(byID)
	for id := range p.sharedWith {
		p.cand[id] = true
	}
	slices.SortFunc(byID, func(a, b data.Server) int { return strings.Compare(a.ID, b.ID) })
	rows, ids := make([]row, len(byID)), make([]string, len(byID))
	for i, s := range byID {
		ids[i] = s.ID
		r := row{Rank: s.Rank, URLSum: spool.URLHash(s.URL), Paused: paused(s.ID), status: pendingStatus, Uptime7d: -1, Tools: -1, Problems: -1}
		if j := st.find(s.ID); j >= 0 {
			old := st.rows[j]
			r.status, r.LastCheck, r.Uptime7d, r.Tools = old.status, old.LastCheck, old.Uptime7d, old.Tools
			r.PlanNext, r.Expires, r.EffCad = old.PlanNext, old.Expires, old.EffCad
			r.protocol, r.Speaks, r.Problems = old.protocol, old.Speaks, old.Problems
			r.HTMLSum, r.StripSum = old.HTMLSum, old.StripSum // its files are as they were
			if old.Rank != r.Rank || old.URLSum != r.URLSum || old.Paused != r.Paused {
				p.cand[s.ID] = true // and its part of the index (writeIndex)
			}
		} else {
			p.cand[s.ID] = true
		}
		rows[i] = r
	}
	for i := range st.rows {
		id := st.id(&st.rows[i])
		if _, ok := p.servers[id]; !ok {
			p.removed = append(p.removed, id)
		}
	}
	st.setRows(rows, ids)
	st.sortOrder()
	st.Meta.List, st.Meta.Paused = listSig, pausedSig
	return nil
}

// lostRecords reports whether a server to render has lost its published
// file (a site build cleaned it, an operator deleted it): with the lists
// unchanged every listed server was rendered before, and one never
// checked is written again from what the lists say (a checked one's
// record is lost: lost.go).
// A stat per candidate, about a thousand a run.
func (p *publication) lostRecords() bool {
	for id := range p.cand {
		if _, err := os.Stat(p.serverFile(id)); errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// readLedger takes each server's next check and effective cadence from the
// planner's ledger. A ledger that cannot be read is skipped: the files
// keep what they said, and the next run tries again.
//
// The ledger is read whole (spool.EachLedgerServer) when the lists were
// read, and whenever its base is not the one last read whole; else only
// its delta, which holds every record changed since the base
// (spool.EachLedgerChange): a few hundred records a minute, where the base
// has one a server listed. The delta's records name servers by their
// place in the ledger, which is the rank order of the site's rows when the
// base was read whole in step with it (Meta.Ledger is kept only then).
func (p *publication) readLedger() {
	type plan struct {
		row       int
		next, eff int64
	}
	var plans []plan
	set := func(i int, next, eff int64) {
		if r := p.st.row(i); next != r.PlanNext || eff != r.EffCad {
			plans = append(plans, plan{i, next, eff})
		}
	}
	// of applies the record e to row i: its next check, unless it is of
	// another address (a record the planner has not renewed yet).
	of := func(i int, e *spool.LedgerServer) {
		r := p.st.row(i)
		if e.URLHash != r.URLSum {
			set(i, 0, 0)
			return
		}
		var eff int64
		if c := e.EffectiveCadence(); c > data.Tier(r.Rank) {
			eff = int64(c / time.Second)
		}
		set(i, e.NextDue*1000, eff)
	}
	apply := func() {
		for _, c := range plans {
			r := p.st.row(c.row)
			r.PlanNext, r.EffCad = c.next, c.eff
			p.cand[p.st.id(r)] = true
		}
	}
	m := &p.st.Meta
	if mark := m.Ledger; mark != nil && p.servers == nil && !p.stats.Rebuilt && mark.Servers == p.st.n() {
		ok, err := spool.EachLedgerChange(p.cfg.DataDir, *mark, func(k int, e *spool.LedgerServer) { of(p.st.orderAt(k), e) })
		if err == nil && ok {
			apply()
			p.log.Debug("read the ledger's changes since its base", "changed", len(plans))
			return
		}
		if err != nil {
			p.log.Debug("reading the ledger whole: its delta could not be read alone", "err", err)
		}
		plans = plans[:0]
	}
	m.Ledger = nil
	// Read whole, the ledger is compared with every row.
	if err := p.st.loadAll(); err != nil {
		p.bad(err)
		return
	}
	planned := make([]bool, p.st.n())
	// The ledger keeps its records in the order of the ranked list, as
	// Order does: most are found in step, without a search.
	k, inStep := 0, true
	mark, err := spool.EachLedgerServer(p.cfg.DataDir, func(e *spool.LedgerServer) {
		i := -1
		if k < p.st.n() && p.st.idOf(p.st.orderAt(k)) == e.ID {
			i = p.st.orderAt(k)
		} else {
			i, inStep = p.st.find(e.ID), false
		}
		k++
		if i < 0 || e.URLHash != p.st.rows[i].URLSum {
			return
		}
		planned[i] = true
		of(i, e)
	})
	if err != nil {
		p.bad(err)
		return
	}
	for i, ok := range planned {
		if !ok {
			set(i, 0, 0)
		}
	}
	apply()
	if inStep && k == p.st.n() && mark.Seq != 0 {
		m.Ledger = &mark
	}
	p.log.Debug("read the ledger whole", "changed", len(plans), "in_step", m.Ledger != nil)
}

// readResults reads the results not folded in yet: what journals gained
// since the last run, and Parquet parts not read before. A part or journal
// that cannot be read is named in Stats.Bad and read again next run.
func (p *publication) readResults() error {
	m := &p.st.Meta
	oldest := p.now.Add(-monthKeep)
	if p.stats.Rebuilt {
		oldest = p.now.Add(-rebuildKeep)
	}
	p.oldest = oldest
	take := func(rs []data.Result) {
		for _, r := range rs {
			if r.Started.Before(oldest) {
				continue
			}
			if !p.hold(r) {
				continue
			}
			p.cand[r.ID] = true
			p.stats.Results++
		}
	}
	journals, err := data.Dir(p.cfg.DataDir).Journals()
	if err != nil {
		return fmt.Errorf("list journals: %w", err)
	}
	seen := map[string]bool{}
	for _, j := range journals {
		name := filepath.Base(j)
		fi, err := os.Stat(j)
		if err != nil {
			continue // folded meanwhile: its part is read below or next run
		}
		seen[name] = true
		mark := m.Journals[name]
		if mark.Size == fi.Size() {
			continue
		}
		rs, bad, err := spool.ReadJournal(j)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		for _, b := range bad {
			p.bad(b)
		}
		if err != nil {
			p.bad(err)
		}
		if mark.Done > len(rs) || mark.Size > fi.Size() {
			mark.Done = 0 // not the journal read before
		}
		take(rs[mark.Done:])
		m.Journals[name] = journalMark{Size: fi.Size(), Done: len(rs)}
	}
	for name := range m.Journals {
		if !seen[name] {
			delete(m.Journals, name)
		}
	}
	parts, err := data.Dir(p.cfg.DataDir).ResultParts()
	if err != nil {
		return fmt.Errorf("list results: %w", err)
	}
	oldDay := oldest.Format("2006-01-02")
	seen = map[string]bool{}
	for _, part := range parts {
		rel, _ := filepath.Rel(p.cfg.DataDir, part)
		fi, err := os.Stat(part)
		if err != nil {
			continue // compacted or removed meanwhile
		}
		seen[rel] = true
		if data.DayOf(filepath.Dir(part)) < oldDay || m.Parts[rel] == fi.Size() {
			m.Parts[rel] = fi.Size()
			continue
		}
		// A batch of rows at a time: a compacted day is every check of
		// the day.
		n, err := history.ScanParquet(part, take)
		if err != nil {
			// Set aside, so reported once, and restored from its second
			// copy when that reads, of which the rows taken before the
			// damage are skipped.
			restored, rerr := history.RecoverParquet(p.cfg.DataDir, part, err, p.now)
			p.bad(rerr)
			if !restored {
				continue
			}
			if _, err = history.ScanParquet(part, func(rs []data.Result) {
				skip := min(n, len(rs))
				n -= skip
				take(rs[skip:])
			}); err != nil {
				p.bad(err)
				continue
			}
		}
		m.Parts[rel] = fi.Size()
	}
	for rel := range m.Parts {
		if !seen[rel] {
			delete(m.Parts, rel)
		}
	}
	return p.spillErr
}

// hold keeps r, a result of a listed server, until its server is
// rendered: in memory, or in a rebuild in the spill of its batch
// (spill.go). It reports whether r is of a listed server; a result that
// cannot be spilled fails the publish (p.spillErr).
func (p *publication) hold(r data.Result) bool {
	i := p.st.find(r.ID)
	if i < 0 {
		return false
	}
	if p.spill == nil {
		p.pending[r.ID] = append(p.pending[r.ID], r)
	} else if err := p.spill.add(i, r); err != nil && p.spillErr == nil {
		p.spillErr = err
	}
	return true
}

// records are a server's record files as loadSummary read them, nil when
// absent: its published file and its older checks. Its files are compared
// with them, not read again (writer.putOver). badges are those its
// published file implies (Of), to write only badges that change.
// older is the older checks' file as read, nil when there is none;
// olderJSON says it was of the layout before (olderJSONPath), which goes
// once they are written in the new one.
type records struct {
	file      []byte
	older     *olderLog
	olderJSON bool
	badges    [4]badge.Badge
}

// serverFile is the path of the published file of the server id: its
// record.
func (p *publication) serverFile(id string) string {
	return filepath.Join(p.cfg.OutDir, "servers", filepath.FromSlash(id)+".json")
}

// loadSummary rebuilds a server's record from its published file, its
// checks kept in olderPath, and nothing else: the
// published file is the record, so an incremental run writes one file per
// server it renders. A missing file is nil: never checked, or a new site.
// The records read are returned on error too.
func (p *publication) loadSummary(id string) (*record.Summary, records, error) {
	var rec records
	path := p.serverFile(id)
	var b []byte
	err := os.ErrNotExist // nothing is there in a directory written afresh
	if _, fresh := p.w.afresh(path); !fresh {
		b, err = os.ReadFile(path)
	}
	if err == nil {
		rec.file = b
	}
	if errors.Is(err, os.ErrNotExist) {
		// A server back on the list: its record from before it left.
		retired, rerr := p.unretire(id)
		if rerr != nil || retired == "" {
			return nil, rec, rerr
		}
		path = retired
		if b, err = os.ReadFile(path); err == nil {
			// From now on its published file is the record, once the flush
			// has put it in place: a publish that fails or is killed
			// before leaves the one kept, for the next to read.
			p.w.removeAfter(path)
		}
	}
	if err != nil {
		return nil, rec, fmt.Errorf("read published file of %s: %w", id, err)
	}
	f, err := record.ReadServerFile(b)
	if err != nil {
		return nil, rec, &undecodable{path, err}
	}
	s := record.SummaryOf(f)
	rec.badges = badge.Of(f)
	op := olderPath(p.cfg.DataDir, id)
	ob, err := os.ReadFile(op)
	if errors.Is(err, os.ErrNotExist) { // kept in the layout before?
		op = olderJSONPath(p.cfg.DataDir, id)
		ob, err = os.ReadFile(op)
		rec.olderJSON = err == nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, rec, fmt.Errorf("read older checks of %s: %w", id, err)
	}
	if err == nil {
		older, err := readOlder(ob)
		if err != nil {
			return nil, rec, &undecodable{op, err}
		}
		older.upTo(s.State.LastCheck)
		rec.older = &older
		s.Checks = record.MergeChecks(older.checks, s.Checks)
	}
	return s, rec, nil
}
