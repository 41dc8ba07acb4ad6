package site

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/badge"
	"plug.directory/prober/site/checks"
	"plug.directory/prober/site/feed"
	"plug.directory/prober/site/pages"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// renderAll renders every candidate server, in parallel. A server whose
// files cannot be written costs itself only (unpublished); the error is
// that of ctx, or of a row of the site's record that could not be read.
func (p *publication) renderAll(ctx context.Context) error {
	// Rows are found and decoded before the workers start: they write
	// rows' fields while others would search them.
	ids := make([]int, 0, len(p.cand))
	for id := range p.cand {
		if i := p.st.find(id); i >= 0 {
			ids = append(ids, i)
		}
	}
	slices.Sort(ids)
	p.stats.Rendered, p.rendered = len(ids), ids
	if err := p.st.loadRows(ids); err != nil {
		return err
	}
	if p.spill == nil {
		// A minute's servers, one at a time: their files go into the
		// same few directories, whose lock takes each create and rename
		// in turn, so that workers in parallel wait on it, spinning and
		// waking each other, and cost a tenth to a fifth more CPU for the
		// same time (BenchmarkPublishIncremental, 100 to 3,000 servers).
		p.renderRows(ctx, ids, 1)
		return ctx.Err()
	}
	// A rebuild: a batch of servers at a time, with its results read
	// back from the spill while the batch before is rendered.
	type loaded struct {
		pending map[string][]data.Result
		err     error
	}
	next := make(chan loaded, 1)
	go func() {
		defer close(next)
		for k := range p.spill.batches() {
			m, err := p.spill.load(k)
			next <- loaded{m, err}
			if err != nil || ctx.Err() != nil {
				return
			}
		}
	}()
	defer func() {
		for range next { // the reader ends at its next batch
		}
	}()
	held := map[string][]data.Result{}
	lo := 0
	for k := range p.spill.batches() {
		b, ok := <-next
		if !ok {
			break
		}
		if b.err != nil {
			return b.err
		}
		hi := lo
		for hi < len(ids) && ids[hi]/p.spill.batch == k {
			hi++
		}
		p.pending = b.pending
		p.renderRows(ctx, ids[lo:hi], p.cfg.Workers)
		lo = hi
		if err := ctx.Err(); err != nil {
			return err
		}
		// The results of a server not published are kept, for
		// carryUnpublished; the others are done with.
		for _, u := range p.stats.Unpublished {
			if rs, ok := b.pending[u.ID]; ok {
				held[u.ID] = rs
			}
		}
	}
	p.pending = held
	return ctx.Err()
}

// renderRows renders the rows ids, workers at a time (0 means 8).
func (p *publication) renderRows(ctx context.Context, ids []int, workers int) {
	if workers <= 0 {
		workers = 8
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) || ctx.Err() != nil {
					return
				}
				if err := p.renderOne(ids[i]); err != nil {
					p.unpublished(ids[i], p.st.idOf(ids[i]), err) // its files cost it only
				}
			}
		})
	}
	wg.Wait()
}

// renderOne folds the pending results of the server of row i into its
// record and writes its files. Each call touches only its own row.
func (p *publication) renderOne(i int) error {
	r := p.st.row(i) // decoded before the workers start (renderRows)
	id := p.st.id(r)
	s, rec, err := p.loadSummary(id)
	var bad *undecodable
	switch {
	case p.stats.Rebuilt && errors.As(err, &bad):
		s = nil // made again from the history
	case errors.As(err, &bad):
		return recordLost(id, bad.path, bad.err)
	case err != nil:
		return err
	case s == nil && r.LastCheck != 0 && !p.stats.Rebuilt:
		return recordLost(id, p.serverFile(id), os.ErrNotExist)
	}
	loaded := s != nil
	if !loaded {
		s = &record.Summary{}
	}
	oldSpans, oldBadges, oldWarnings := slices.Clone(s.Spans), rec.badges, slices.Clone(s.CertWarnings) // as its feed and badges show them
	switch {
	case p.stats.Rebuilt:
		s.Complete = p.oldest.UnixMilli() // every check since was read
	case loaded:
		s.Complete = p.now.Add(-record.MonthWindow).UnixMilli() // what the last run kept
		s.KeepPublishedDays()
	}
	if st, ok := p.states[id]; ok && s.State.LastCheck.IsZero() {
		// Rebuilding: the state knows what is older than the history, at
		// the history's precision.
		st.LastCheck, st.LastAnswered, st.FailingSince = record.TruncMS(st.LastCheck), record.TruncMS(st.LastAnswered), record.TruncMS(st.FailingSince)
		st.RetryAfter = record.TruncMS(st.RetryAfter)
		s.State = st
	}
	if srv, ok := p.servers[id]; ok {
		s.Listed, s.SharedWith = srv, p.sharedWith[id]
	}
	s.Listed.ID, s.Listed.Rank = id, r.Rank
	// In the order the checks started, so that a rebuild, which reads
	// journals before Parquet, sees the tool definitions change as the
	// runs did.
	pending := p.pending[id]
	slices.SortStableFunc(pending, func(a, b data.Result) int { return a.Started.Compare(b.Started) })
	read := func(hash string) ([]spool.ToolDef, error) { return spool.ReadToolDefs(p.cfg.DataDir, hash) }
	s.Checks = slices.Grow(s.Checks, len(pending)) // once, not as each check is inserted
	for _, res := range pending {
		s.Apply(res) // a new address starts the summary afresh, its tools too
		s.ApplyTools(res, read)
	}
	s.ApplyPauses(p.pauses[id], r.Paused, !loaded, p.now)
	s.DeriveSpans()
	s.PruneSpans(p.now)
	s.WarnCert(p.now, true)
	s.PruneCertWarnings(p.now)
	l := record.Listing{Server: s.Listed, Paused: r.Paused, EffCad: time.Duration(r.EffCad) * time.Second, SharedWith: s.SharedWith}
	if r.PlanNext != 0 {
		l.PlanNext = time.UnixMilli(r.PlanNext).UTC()
	}
	f, expires := record.ServerFileOf(l, s, p.now)
	f.Badges = badge.LinksOf(id)
	jb, err := record.MarshalServerFile(f)
	if err != nil {
		return err
	}
	jb = append(jb, '\n')
	s.Prune(p.now) // after render: a rebuild's older checks make its daily series
	out := p.cfg.OutDir
	rel := filepath.FromSlash(id)
	// A server with more checks than its published history holds keeps
	// them all in its older checks, the history's too, written first: a
	// check is there before it leaves the history of the file written next,
	// so neither a write that fails nor a crash before the flush that makes
	// one durable and not the other loses it.
	if len(s.Checks) > record.HistoryLen {
		old := olderLog{end: -1} // none: written anew
		if rec.older != nil {
			old = *rec.older
		}
		var err error
		switch b, whole := olderChange(old, s.Checks); {
		case whole:
			err = p.w.write(olderPath(p.cfg.DataDir, id), b)
		case b != nil: // most renders: a check more, one aged out
			err = p.w.appendAt(olderPath(p.cfg.DataDir, id), b, old.end)
		}
		if err != nil {
			return err
		}
	} else if rec.older != nil || !loaded {
		if err := p.w.remove(olderPath(p.cfg.DataDir, id)); err != nil {
			return err
		}
	}
	if rec.olderJSON { // read in the layout before: it goes once what replaces it is durable
		p.w.removeAfter(olderJSONPath(p.cfg.DataDir, id))
	}
	// A badge or a feed that shows something new is written without a
	// look at the old one; one whose old bytes are not known is read back.
	// A record brought back from retirement (rec.file nil) had its badges
	// and feed removed with the server: they are not as published.
	shown := loaded && !p.stats.Rebuilt && rec.file != nil && !p.repair[id]
	if p.repair[id] { // a file of its is missing: each is compared with what is there
		r.HTMLSum, r.StripSum = 0, 0
	}
	put := p.w.put
	if shown {
		put = func(path string, b []byte) (bool, error) { return true, p.w.write(path, b) }
	}
	for i, b := range badge.Of(f) {
		if shown && b == oldBadges[i] {
			continue // as published: most checks change no badge
		}
		bb, err := marshalFile(b)
		if err != nil {
			return err
		}
		if _, err := put(filepath.Join(out, badge.Dirs[i], rel+".json"), bb); err != nil {
			return err
		}
	}
	if !shown || !slices.Equal(oldSpans, s.Spans) ||
		!slices.Equal(oldWarnings, s.CertWarnings) {
		// Most checks change no status: their feed stays as it is,
		// not encoded again to be compared.
		fb, err := feed.Server(f)
		if err != nil {
			return err
		}
		if _, err := put(filepath.Join(out, "feeds", rel+".atom"), fb); err != nil {
			return err
		}
	}
	if _, err := p.w.putSum(filepath.Join(out, strip.Dir, rel+".svg"), strip.File(id, f.Daily), &r.StripSum); err != nil {
		return err
	}
	p.noteFeed(id, feed.EntriesOf(id, f.Incidents, feed.ServerLen))
	if !p.cfg.NoHTML {
		buf := pageBuffers.Get().(*[]byte)
		hb, err := pages.AppendServer((*buf)[:0], f)
		if err == nil {
			_, err = p.w.putSum(filepath.Join(out, "servers", rel+".html"), hb, &r.HTMLSum)
		}
		*buf = hb
		pageBuffers.Put(buf)
		if err != nil {
			return err
		}
	}
	// The record last, after its older checks and every file made from
	// it: a publish that fails or is killed before its files are all in
	// place (writer.replacePending renames them in the order written, and
	// none after one that failed) leaves the record as it was, and the
	// next publish, reading the results again, writes them all. Written
	// before them, the record would hold the check, and the next publish,
	// finding it there, would leave a badge or feed without it.
	if _, err := p.w.putOver(filepath.Join(out, "servers", rel+".json"), jb, rec.file); err != nil {
		return err
	}
	ir := rowOf(f)
	r.Tools = -1
	r.setStatus(ir.Status)
	if ir.Tools != nil {
		r.Tools = int64(*ir.Tools)
	}
	r.LastCheck, r.Uptime7d, r.Expires = 0, -1, 0
	if ir.LastCheck != nil {
		r.LastCheck = ir.LastCheck.UnixMilli()
	}
	if ir.Uptime7d != nil {
		r.Uptime7d = int64(*ir.Uptime7d*100 + 0.5)
	}
	if !expires.IsZero() {
		r.Expires = expires.UnixMilli()
	}
	r.setFacts(f)
	return nil
}

// pageBuffers hold the buffers servers' pages are rendered into, which
// the writer is done with once it returns: one a worker, not one a server.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

// removeServer removes the files of a server no longer listed (rule P4).
func (p *publication) removeServer(id string) error {
	if err := p.retire(id); err != nil {
		return err
	}
	for _, path := range append(p.publishedFiles(id), olderPath(p.cfg.DataDir, id), olderJSONPath(p.cfg.DataDir, id)) {
		if err := p.w.remove(path); err != nil {
			return err
		}
	}
	return nil
}

// publishedFiles are the paths of the files of the server id in the
// output: its record (serverFile), its page, badges, strip and feed.
func (p *publication) publishedFiles(id string) []string {
	files, rel := make([]string, len(serverFiles)), filepath.FromSlash(id)
	for k, f := range serverFiles {
		files[k] = filepath.Join(p.cfg.OutDir, f.dir, rel+f.ext)
	}
	return files
}

// serverFiles are where the files of a server are under the output: a
// directory, and the extension its id takes there. The first is its
// record (serverFile), the second its page; then its badges (in the
// order of badge.Of), its strip and its feed.
var serverFiles = []struct{ dir, ext string }{
	{"servers", ".json"}, {"servers", ".html"},
	{badge.Dirs[0], ".json"}, {badge.Dirs[1], ".json"}, {badge.Dirs[2], ".json"}, {badge.Dirs[3], ".json"},
	{strip.Dir, ".svg"}, {"feeds", ".atom"},
}

// serverDirs are the directories of the output that hold a file of each
// server, those of serverFiles, each once.
var serverDirs = func() (dirs []string) {
	for _, f := range serverFiles {
		if !slices.Contains(dirs, f.dir) {
			dirs = append(dirs, f.dir)
		}
	}
	return dirs
}()

// sweepUnlisted removes, in a rebuild, the files of servers that are not
// listed: without a state, the site does not know which were listed before.
func (p *publication) sweepUnlisted() error {
	for _, sub := range serverDirs {
		root := filepath.Join(p.cfg.OutDir, sub)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			id := filepath.ToSlash(rel)
			if durable.IsTempName(d.Name()) {
				// This publish's own, which flush renames into place:
				// those a killed publish left were removed as this one
				// began (beginPublish).
				return nil
			}
			for _, ext := range data.PublishedSuffixes {
				id = strings.TrimSuffix(id, ext)
			}
			if p.st.find(id) < 0 {
				return p.w.remove(path)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("sweep %s: %w", root, err)
		}
	}
	return nil
}

// writeShared writes the files about every server or none: index.json and
// its preview, probe.json, status.json, the checks page, and the pages'
// stylesheet and script.
func (p *publication) writeShared() error {
	out := p.cfg.OutDir
	status, err := statusOf(p.cfg.DataDir, p.now, p.bad)
	if err != nil {
		return err
	}
	status.Unpublished = p.unpublishedStatus()
	if err := p.writeIndex(p.stats.Rebuilt || p.killedBefore); err != nil {
		return err
	}
	// The preview's index says when it was published and whether checks
	// are running, so it is rendered every run (put writes it only when
	// its bytes change).
	if !p.cfg.NoHTML {
		f, cut := p.previewIndex()
		hb, err := pages.Index(f, cut, status)
		if err != nil {
			return err
		}
		if err := p.putShared(filepath.Join(out, "index.html"), hb); err != nil {
			return err
		}
	}
	if err := p.writeFeed(); err != nil {
		return err
	}
	probe := checks.Facts(p.cfg.Contact)
	pb, err := marshalFile(probe)
	if err != nil {
		return err
	}
	text, err := checks.Text(probe)
	if err != nil {
		return err
	}
	sb, err := marshalFile(status)
	if err != nil {
		return err
	}
	// status.json, like index.json, is moved into place once the files
	// it reports on are durable.
	statusPath := filepath.Join(out, "status.json")
	if changed, sum := p.sharedChanged(statusPath, sb); changed {
		if err := p.w.stage(statusPath, sb); err != nil {
			return err
		}
		p.st.Meta.Sums["status.json"] = sum
	}
	files := map[string][]byte{"probe.json": pb, "checks.txt": text}
	if !p.cfg.NoHTML {
		if files["checks.html"], err = pages.Checks(text); err != nil {
			return err
		}
	}
	if !p.cfg.NoHTML {
		for name, b := range pages.Assets {
			files[name] = b
		}
	}
	for _, name := range []string{"probe.json", "checks.txt", "checks.html", "site.css", "site.js"} {
		if b, ok := files[name]; ok {
			if err := p.putShared(filepath.Join(out, name), b); err != nil {
				return err
			}
		}
	}
	return nil
}

// previewIndex returns the head of index.json that index.html shows, and
// whether rows were left out.
func (p *publication) previewIndex() (record.IndexFile, bool) {
	n := p.cfg.PreviewRows
	if n <= 0 {
		n = 1000
	}
	f := indexHead(p.st)
	for k := range min(n, p.st.n()) {
		r := p.st.row(p.st.orderAt(k))
		f.Rows = append(f.Rows, r.indexRow(p.st.id(r)))
	}
	return f, p.st.n() > n
}

// noteFeed records the newest status changes of a server rendered this
// run, for the directory feed.
func (p *publication) noteFeed(id string, es []feed.Entry) {
	p.feedMu.Lock()
	p.feedNew[id] = es
	p.feedMu.Unlock()
}

// writeFeed merges the changes of the servers rendered this run into the
// directory feed's record and writes feed.atom from it. A record that
// cannot be read, or is not what was written, is named in Stats.Bad and
// made again from the servers' files.
func (p *publication) writeFeed() error {
	var old []feed.Entry
	asWritten := false // old is the record as written, feed.atom made from it
	if !p.stats.Rebuilt {
		name := filepath.Base(feedPath(p.cfg.DataDir))
		sum := p.st.Meta.Sums[name]
		if p.killedBefore {
			sum = 0 // the file may be newer than the record that hashed it
		}
		var err error
		if old, err = loadFeed(p.cfg.DataDir, sum); err != nil {
			p.bad(err)
			old = p.feedFromFiles()
			delete(p.st.Meta.Sums, name) // written again, whatever it holds
		}
		asWritten = err == nil && sum != 0 && p.st.Meta.Sums["feed.atom"] != 0
	}
	gone := make(map[string]bool, len(p.removed))
	for _, id := range p.removed {
		gone[id] = true
	}
	es := feed.Merge(old, p.feedNew, gone)
	if asWritten && len(es) > 0 && slices.Equal(es, old) && !p.readBackTurn("feed.atom") {
		// Most minutes change no status, and a feed with entries is
		// the bytes of its entries (it was updated at its newest): the
		// files are as written. Not encoded again, but in their turn.
		return nil
	}
	b, err := feed.Directory(es, p.now)
	if err != nil {
		return err
	}
	if err := p.putShared(filepath.Join(p.cfg.OutDir, "feed.atom"), b); err != nil {
		return err
	}
	rb, err := json.Marshal(es)
	if err != nil {
		return fmt.Errorf("encode feed record: %w", err)
	}
	return p.putShared(feedPath(p.cfg.DataDir), rb)
}

// feedFromFiles returns the newest feed.Len status changes of the servers
// not rendered this run, from their published files (publishedIncidents):
// what a lost directory feed's record held of them. Every server's file
// is read, once, after a damage.
func (p *publication) feedFromFiles() []feed.Entry {
	var es []feed.Entry
	for i := range p.st.n() {
		id := p.st.idOf(i)
		if _, ok := p.feedNew[id]; ok {
			continue
		}
		es = append(es, feed.EntriesOf(id, p.publishedIncidents(id), feed.ServerLen)...)
		if len(es) > 2*feed.Len {
			es = feed.Merge(es, nil, nil) // the newest Len: bounded at a million servers
		}
	}
	return es
}

// putShared writes a file about every server, or a record of the site,
// by the hash the site's record keeps of it (sharedChanged).
func (p *publication) putShared(path string, b []byte) error {
	changed, sum := p.sharedChanged(path, b)
	if changed {
		if err := p.w.write(path, b); err != nil {
			return err
		}
	}
	p.st.Meta.Sums[filepath.Base(path)] = sum
	return nil
}

// sharedFiles are the output's files about every server, whose hashes the
// site's record keeps: each publish reads one of them back, in turn
// (sharedChanged), so that one damaged or deleted is written again within
// as many minutes though what it holds does not change.
var sharedFiles = []string{"checks.html", "checks.txt", "feed.atom", "index.html", "index.json", "probe.json", "site.css", "site.js", "status.json"}

// readBackTurn reports whether the shared file name is the one read back
// this minute (sharedFiles).
func (p *publication) readBackTurn(name string) bool {
	return name == sharedFiles[window(p.now, 1, len(sharedFiles))]
}

// sharedChanged is writer.changed of a shared file by the hash the site's
// record keeps of it, but for the file whose turn it is (sharedFiles): that
// one is read back and compared, and written again, named in the log, when
// it is not the bytes written.
func (p *publication) sharedChanged(path string, b []byte) (bool, uint64) {
	name := filepath.Base(path)
	known := p.st.Meta.Sums[name]
	if known == 0 || !p.readBackTurn(name) {
		return p.w.changed(path, b, known)
	}
	changed, sum := p.w.changed(path, b, 0)
	if changed && sum == known {
		p.log.Warn("a shared file is not what was written; writing it again", "path", path)
	}
	return changed, sum
}
