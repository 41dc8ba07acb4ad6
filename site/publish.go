package site

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"plug.directory/prober/data"
)

// Config says what to publish and where. The zero value of every optional
// field means its default.
type Config struct {
	DataDir     string           // the data directory: journal/, results/, state/, plans/ (the planner's ledger); the site keeps its own record in DataDir/site
	ServersPath string           // the ranked list (CSV)
	PausedPath  string           // the paused list; "" means no server is paused
	OutDir      string           // where the public files go
	Now         func() time.Time // nil means time.Now
	Logger      *slog.Logger     // nil discards
	Workers     int              // servers rendered and written in parallel; 0 means 8
	PreviewRows int              // rows of index.html; 0 means 1000
	NoHTML      bool             // skip the HTML preview (index.html, servers/<id>.html, checks.html)
}

// Validate reports a missing required field.
func (c Config) Validate() error {
	switch {
	case c.DataDir == "":
		return errors.New("site config: no data directory")
	case c.ServersPath == "":
		return errors.New("site config: no ranked list")
	case c.OutDir == "":
		return errors.New("site config: no output directory")
	}
	return nil
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return time.Now().UTC()
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Stats says what one Publish did.
type Stats struct {
	Servers   int           // servers listed
	Rendered  int           // servers whose files were rendered
	Written   int           // files replaced because their bytes changed
	Unchanged int           // files rendered but left alone, identical
	Removed   int           // files removed: those of servers no longer listed, and records no longer needed
	Results   int           // results folded in
	Rebuilt   bool          // no site state was found: every server was rendered
	Bad       []error       // inputs skipped: bad list rows, corrupt journal lines or Parquet files
	Took      time.Duration // wall time
}

// safeID matches the ids that can name files: slash-separated segments of
// letters, digits, '.', '_', '-', '@' and '+', none starting with a dot.
var safeID = regexp.MustCompile(`^[A-Za-z0-9_@+-][A-Za-z0-9._@+-]*(/[A-Za-z0-9_@+-][A-Za-z0-9._@+-]*)*$`)

// monthKeep is how far back results are folded in: the longest uptime
// window and a day of slack.
const monthKeep = monthWindow + 24*time.Hour

// Publish brings the public files under cfg.OutDir up to date with the data
// directory, the ranked list and the paused list, rewriting only files whose
// bytes change, each atomically (rule P3). Overlapping calls on one data
// directory wait for each other. Inputs that cannot be read in part (a bad
// row, a corrupt journal line or Parquet file) are skipped, logged and
// listed in Stats.Bad; an error means nothing could be published (no ranked
// list, no output directory), and the files already published stand.
func Publish(ctx context.Context, cfg Config) (Stats, error) {
	start := time.Now()
	if err := cfg.Validate(); err != nil {
		return Stats{}, err
	}
	unlock, err := lockSite(cfg.DataDir)
	if err != nil {
		return Stats{}, err
	}
	defer unlock()
	p := &publication{cfg: cfg, log: cfg.logger(), now: cfg.now(), w: newWriter(), cand: map[string]bool{}, pending: map[string][]data.Result{}}
	err = p.run(ctx)
	p.stats.Written = int(p.w.written.Load())
	p.stats.Unchanged = int(p.w.unchanged.Load())
	p.stats.Removed = int(p.w.removed.Load())
	p.stats.Took = time.Since(start)
	if err != nil {
		return p.stats, err
	}
	p.log.Info("published", "servers", p.stats.Servers, "rendered", p.stats.Rendered, "written", p.stats.Written,
		"unchanged", p.stats.Unchanged, "removed", p.stats.Removed, "results", p.stats.Results, "bad", len(p.stats.Bad), "took", p.stats.Took)
	return p.stats, nil
}

// lockSite takes the lock of the site's record, waiting for another
// publisher to finish.
func lockSite(dataDir string) (unlock func() error, err error) {
	return data.LockFile(filepath.Join(dataDir, "site", ".publish.lock"))
}

// publication is one run of Publish.
type publication struct {
	cfg   Config
	log   *slog.Logger
	now   time.Time
	w     *writer
	st    *store
	stats Stats

	servers      map[string]data.Server // the ranked list, when it was read this run
	sharedWith   map[string][]string    // with servers: the others at each shared address (data.SharedAddresses)
	states       map[string]data.State  // the data package's states, when rebuilding
	cand         map[string]bool        // ids to render
	pending      map[string][]data.Result
	removed      []string
	indexChanged atomic.Bool
	mark         time.Time // end of the last step, for phase
}

func (p *publication) bad(err error) {
	p.log.Warn("skipped bad input", "err", err)
	p.stats.Bad = append(p.stats.Bad, err)
}

func (p *publication) run(ctx context.Context) error {
	p.phase("")
	st, err := loadStore(p.cfg.DataDir)
	if err != nil {
		p.bad(fmt.Errorf("%w; rebuilding the site", err))
	}
	if _, err := os.Stat(filepath.Join(p.cfg.OutDir, "index.json")); err != nil && st != nil {
		// The published files are the records: without them, rebuild.
		p.log.Warn("no index.json in the output; rebuilding the site", "out", p.cfg.OutDir)
		st = nil
	}
	if st == nil {
		st, p.stats.Rebuilt = newStore(), true
	}
	p.st = st
	// A rebuild syncs once, at the end of the server files, rather than
	// file by file: a crash before then leaves no index.json, and the next
	// run rebuilds again. Readers see whole files either way (rule P3).
	p.w.noSync = p.stats.Rebuilt
	p.phase("load state")
	if err := p.readLists(); err != nil {
		return err
	}
	p.stats.Servers = len(st.Rows)
	if p.stats.Rebuilt {
		states, bad, err := data.LoadStates(p.cfg.DataDir)
		for _, b := range bad {
			p.bad(b)
		}
		if err != nil {
			p.bad(err)
		}
		p.states = states
		for _, r := range st.Rows {
			p.cand[r.ID] = true
		}
	}
	p.phase("lists")
	p.readLedger()
	p.phase("ledger")
	if err := p.readResults(); err != nil {
		return err
	}
	p.phase("results")
	nowMS := p.now.UnixMilli()
	for _, r := range st.Rows {
		if r.Expires != 0 && r.Expires <= nowMS {
			p.cand[r.ID] = true
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.renderAll(ctx); err != nil {
		return err
	}
	p.phase("render")
	if p.w.noSync {
		// The server files of a rebuild are made durable at once, before
		// index.json, whose absence means "rebuild" to the next run.
		if err := p.w.flush(); err != nil {
			return err
		}
		p.w.noSync = false
	}
	if p.stats.Rebuilt {
		if err := p.sweepUnlisted(); err != nil {
			return err
		}
	}
	for _, id := range p.removed {
		if err := p.removeServer(id); err != nil {
			return err
		}
	}
	if err := p.writeShared(); err != nil {
		return err
	}
	p.phase("shared")
	if err := p.w.flush(); err != nil {
		return err
	}
	p.phase("flush")
	b, err := st.encode()
	if err != nil {
		return err
	}
	err = data.WriteFileAtomic(storePath(p.cfg.DataDir), b, 0o644)
	p.phase("save state")
	return err
}

// phase logs how long the step that just ended took, at debug level.
func (p *publication) phase(name string) {
	now := time.Now()
	if !p.mark.IsZero() {
		p.log.Debug("publish step", "step", name, "took", now.Sub(p.mark))
	}
	p.mark = now
}

// readLists reads the ranked list and the paused list when either changed
// since the last run, and brings the rows up to date: new servers, new
// ranks or addresses, pauses, and servers no longer listed.
func (p *publication) readLists() error {
	st := p.st
	listSig, err := sigOf(p.cfg.ServersPath)
	if err != nil {
		return fmt.Errorf("read ranked list: %w", err)
	}
	var pausedSig fileSig
	if p.cfg.PausedPath != "" {
		pausedSig, _ = sigOf(p.cfg.PausedPath)
	}
	if !p.stats.Rebuilt && listSig == st.Meta.List && pausedSig == st.Meta.Paused {
		return nil
	}
	// Held to the last good list plan took: a list cut short unpublishes
	// no server (issue 12).
	servers, bad, stale, err := data.ListGuard{Dir: p.cfg.DataDir, ReadOnly: true}.Read(p.cfg.ServersPath)
	for _, b := range bad {
		p.bad(b)
	}
	if sum := data.SummarizeRows(p.cfg.ServersPath, len(servers), bad); sum != "" {
		p.log.Warn(sum)
	}
	if err != nil {
		return err // an empty list would unpublish every server
	}
	if stale != nil {
		p.bad(stale)
		listSig = fileSig{} // read again next run
	}
	oldPaused := func(id string) bool {
		i := st.find(id)
		return i >= 0 && st.Rows[i].Paused
	}
	paused := oldPaused
	if p.cfg.PausedPath != "" {
		list, err := data.ReadPausedList(p.cfg.PausedPath)
		if err != nil {
			// Rule R2: a list that cannot be read resumes nothing; the
			// pauses of the last good copy stand, and it is read again
			// next run.
			p.bad(err)
			pausedSig = st.Meta.Paused
		} else {
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
	for _, s := range servers {
		if !safeID.MatchString(s.ID) {
			p.bad(fmt.Errorf("read ranked list %s: server id %q cannot name a file; not published", p.cfg.ServersPath, s.ID))
			continue
		}
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
	rows := make([]row, len(byID))
	for i, s := range byID {
		r := row{ID: s.ID, Rank: s.Rank, URLSum: data.URLHash(s.URL), Paused: paused(s.ID), Status: data.Pending, Uptime7d: -1}
		if j := st.find(s.ID); j >= 0 {
			old := st.Rows[j]
			r.Status, r.LastCheck, r.Uptime7d, r.Tools = old.Status, old.LastCheck, old.Uptime7d, old.Tools
			r.PlanNext, r.Expires, r.EffCad = old.PlanNext, old.Expires, old.EffCad
			if old.Rank != r.Rank || old.URLSum != r.URLSum || old.Paused != r.Paused {
				p.cand[s.ID] = true
			}
			if old.Rank != r.Rank {
				p.indexChanged.Store(true)
			}
		} else {
			p.cand[s.ID] = true
			p.indexChanged.Store(true)
		}
		rows[i] = r
	}
	for _, old := range st.Rows {
		if _, ok := p.servers[old.ID]; !ok {
			p.removed = append(p.removed, old.ID)
			p.indexChanged.Store(true)
		}
	}
	st.Rows = rows
	st.sortOrder()
	st.Meta.List, st.Meta.Paused = listSig, pausedSig
	return nil
}

// readLedger takes each server's next check and effective cadence from the
// planner's ledger. A ledger that cannot be read is skipped: the files keep
// what they said, and the next run tries again.
func (p *publication) readLedger() {
	l, err := data.ReadLedger(p.cfg.DataDir)
	if err != nil {
		p.bad(err)
		return
	}
	// The ledger keeps its records in the order of the ranked list, as
	// Order does: most are found in step, without an index.
	for k, i := range p.st.Order {
		r := &p.st.Rows[i]
		var e data.LedgerServer
		ok := k < len(l.Servers) && l.Servers[k].ID == r.ID
		if ok {
			e = l.Servers[k]
		} else {
			e, ok = l.Lookup(r.ID)
		}
		var next, eff int64
		if ok && e.URLHash == r.URLSum {
			next = e.NextDue * 1000
			if c := e.EffectiveCadence(); c > data.Tier(r.Rank) {
				eff = int64(c / time.Second)
			}
		}
		if next != r.PlanNext || eff != r.EffCad {
			r.PlanNext, r.EffCad = next, eff
			p.cand[r.ID] = true
		}
	}
}

// readResults reads the results not folded in yet: what journals gained
// since the last run, and Parquet parts not read before. A part or journal
// that cannot be read is named in Stats.Bad and read again next run.
func (p *publication) readResults() error {
	m := &p.st.Meta
	oldest := p.now.Add(-monthKeep)
	take := func(rs []data.Result) {
		for _, r := range rs {
			if r.Started.Before(oldest) || p.st.find(r.ID) < 0 {
				continue
			}
			p.pending[r.ID] = append(p.pending[r.ID], r)
			p.cand[r.ID] = true
			p.stats.Results++
		}
	}
	journals, err := filepath.Glob(filepath.Join(data.JournalDir(p.cfg.DataDir), "*.jsonl"))
	if err != nil {
		return fmt.Errorf("list journals: %w", err)
	}
	sort.Strings(journals)
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
		rs, bad, err := data.ReadJournal(j)
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
	parts, err := filepath.Glob(filepath.Join(data.ResultsDir(p.cfg.DataDir), "date=*", "*.parquet"))
	if err != nil {
		return fmt.Errorf("list results: %w", err)
	}
	sort.Strings(parts)
	oldDay := "date=" + oldest.Format("2006-01-02")
	seen = map[string]bool{}
	for _, part := range parts {
		rel, _ := filepath.Rel(p.cfg.DataDir, part)
		fi, err := os.Stat(part)
		if err != nil {
			continue // compacted or removed meanwhile
		}
		seen[rel] = true
		if filepath.Base(filepath.Dir(part)) < oldDay || m.Parts[rel] == fi.Size() {
			m.Parts[rel] = fi.Size()
			continue
		}
		rs, err := data.ReadParquet(part)
		if err != nil {
			p.bad(err)
			continue
		}
		take(rs)
		m.Parts[rel] = fi.Size()
	}
	for rel := range m.Parts {
		if !seen[rel] {
			delete(m.Parts, rel)
		}
	}
	return nil
}

// renderAll renders every candidate server, in parallel.
func (p *publication) renderAll(ctx context.Context) error {
	// Rows are found before the workers start: they write rows' fields
	// while others would search them.
	ids := make([]int, 0, len(p.cand))
	for id := range p.cand {
		if i := p.st.find(id); i >= 0 {
			ids = append(ids, i)
		}
	}
	slices.Sort(ids)
	p.stats.Rendered = len(ids)
	workers := p.cfg.Workers
	if workers <= 0 {
		workers = 8
	}
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) || ctx.Err() != nil {
					return
				}
				if err := p.renderOne(ids[i]); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// loadSummary rebuilds a server's record from its published file, the
// checks older than its history kept in olderPath, and nothing else: the
// published file is the record, so an incremental run writes one file per
// server it renders. A missing file is nil: never checked, or a new site.
func (p *publication) loadSummary(id string) (*summary, error) {
	path := filepath.Join(p.cfg.OutDir, "servers", filepath.FromSlash(id)+".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read published file of %s: %w", id, err)
	}
	var f ServerFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read published file %s: %w", path, err)
	}
	s := summaryOf(f)
	ob, err := os.ReadFile(olderPath(p.cfg.DataDir, id))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read older checks of %s: %w", id, err)
	}
	if err == nil {
		var older []pastCheck
		if err := json.Unmarshal(ob, &older); err != nil {
			return nil, fmt.Errorf("read older checks %s: %w", olderPath(p.cfg.DataDir, id), err)
		}
		s.Checks = mergeChecks(older, s.Checks)
	}
	return s, nil
}

// renderOne folds the pending results of the server of row i into its
// record and writes its files. Each call touches only its own row.
func (p *publication) renderOne(i int) error {
	r := &p.st.Rows[i]
	id := r.ID
	s, err := p.loadSummary(id)
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if !errors.As(err, &se) && !errors.As(err, &te) {
			return err
		}
		p.log.Warn("published record corrupt; starting it afresh", "err", err)
		s = nil
	}
	if s == nil {
		s = &summary{}
	}
	if st, ok := p.states[id]; ok && s.State.LastCheck.IsZero() {
		// Rebuilding: the state knows what is older than the history, at
		// the history's precision.
		st.LastCheck, st.LastAnswered, st.FailingSince = truncMS(st.LastCheck), truncMS(st.LastAnswered), truncMS(st.FailingSince)
		st.RetryAfter = truncMS(st.RetryAfter)
		s.State = st
	}
	if srv, ok := p.servers[id]; ok {
		s.Listed, s.SharedWith = srv, p.sharedWith[id]
	}
	s.Listed.ID, s.Listed.Rank = id, r.Rank
	for _, res := range p.pending[id] {
		s.apply(res)
	}
	s.prune(p.now)
	l := listed{Server: s.Listed, Paused: r.Paused, EffCad: time.Duration(r.EffCad) * time.Second, SharedWith: s.SharedWith}
	if r.PlanNext != 0 {
		l.PlanNext = time.UnixMilli(r.PlanNext).UTC()
	}
	f, expires := render(l, s, p.now)
	jb, err := marshalFile(f)
	if err != nil {
		return err
	}
	bb, err := marshalFile(BadgeOf(f.Status))
	if err != nil {
		return err
	}
	out := p.cfg.OutDir
	rel := filepath.FromSlash(id)
	if _, err := p.w.put(filepath.Join(out, "servers", rel+".json"), jb); err != nil {
		return err
	}
	if _, err := p.w.put(filepath.Join(out, "badges", rel+".json"), bb); err != nil {
		return err
	}
	if !p.cfg.NoHTML {
		hb, err := serverHTML(jb)
		if err != nil {
			return err
		}
		if _, err := p.w.put(filepath.Join(out, "servers", rel+".html"), hb); err != nil {
			return err
		}
	}
	if older := s.older(); len(older) > 0 {
		ob, err := json.Marshal(older)
		if err != nil {
			return fmt.Errorf("encode older checks of %s: %w", id, err)
		}
		if _, err := p.w.put(olderPath(p.cfg.DataDir, id), ob); err != nil {
			return err
		}
	} else if err := p.w.remove(olderPath(p.cfg.DataDir, id)); err != nil {
		return err
	}
	old := *r
	ir := rowOf(f)
	r.Status, r.Tools = ir.Status, int64(ir.Tools)
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
	if old.Status != r.Status || old.Tools != r.Tools || old.LastCheck != r.LastCheck || old.Uptime7d != r.Uptime7d {
		p.indexChanged.Store(true)
	}
	return nil
}

// removeServer removes the files of a server no longer listed (rule P4).
func (p *publication) removeServer(id string) error {
	rel := filepath.FromSlash(id)
	for _, path := range []string{
		filepath.Join(p.cfg.OutDir, "servers", rel+".json"),
		filepath.Join(p.cfg.OutDir, "servers", rel+".html"),
		filepath.Join(p.cfg.OutDir, "badges", rel+".json"),
		olderPath(p.cfg.DataDir, id),
	} {
		if err := p.w.remove(path); err != nil {
			return err
		}
	}
	return nil
}

// sweepUnlisted removes, in a rebuild, the files of servers that are not
// listed: without a state, the site does not know which were listed before.
func (p *publication) sweepUnlisted() error {
	for _, sub := range []string{"servers", "badges"} {
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
			if strings.Contains(filepath.Base(id), ".tmp-") {
				return p.w.remove(path) // left by a publish that crashed
			}
			id = strings.TrimSuffix(strings.TrimSuffix(id, ".json"), ".html")
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
// its preview, probe.json, status.json and the checks page.
func (p *publication) writeShared() error {
	out := p.cfg.OutDir
	indexPath := filepath.Join(out, "index.json")
	if _, err := os.Stat(indexPath); p.indexChanged.Load() || err != nil {
		if err := p.w.replace(indexPath, encodeIndex(p.st)); err != nil {
			return err
		}
		if !p.cfg.NoHTML {
			hb, err := indexHTML(p.previewIndex())
			if err != nil {
				return err
			}
			if _, err := p.w.put(filepath.Join(out, "index.html"), hb); err != nil {
				return err
			}
		}
	}
	probe := ProbeFacts()
	pb, err := marshalFile(probe)
	if err != nil {
		return err
	}
	text, err := RenderChecksText(probe)
	if err != nil {
		return err
	}
	status, err := statusOf(p.cfg.DataDir, p.now)
	if err != nil {
		return err
	}
	sb, err := marshalFile(status)
	if err != nil {
		return err
	}
	files := map[string][]byte{"probe.json": pb, "status.json": sb, "checks.txt": text}
	if !p.cfg.NoHTML {
		if files["checks.html"], err = checksHTML(text); err != nil {
			return err
		}
	}
	for _, name := range []string{"probe.json", "status.json", "checks.txt", "checks.html"} {
		if b, ok := files[name]; ok {
			if _, err := p.w.put(filepath.Join(out, name), b); err != nil {
				return err
			}
		}
	}
	return nil
}

// previewIndex returns the head of index.json that index.html shows, and
// whether rows were left out.
func (p *publication) previewIndex() (IndexFile, bool) {
	n := p.cfg.PreviewRows
	if n <= 0 {
		n = 1000
	}
	f := indexHead(p.st)
	for _, o := range p.st.Order[:min(n, len(p.st.Order))] {
		f.Rows = append(f.Rows, p.st.Rows[o].indexRow())
	}
	return f, len(p.st.Order) > n
}
