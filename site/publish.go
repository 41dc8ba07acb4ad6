package site

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"os"
	"path/filepath"
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/site/feed"
	"plug.directory/prober/site/record"
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
	Workers     int              // servers a rebuild renders and writes in parallel; 0 means 8 (a minute's, one at a time)
	PreviewRows int              // rows of index.html; 0 means 1000
	NoHTML      bool             // skip the HTML preview (index.html, servers/<id>.html, checks.html)
	// Contact is the operator's e-mail address, which the checks page and
	// probe.json give to owners who want the checks stopped; required
	// (CheckContact).
	Contact string

	calls fileCalls // the file system's, but in tests
	// rebuildBatch is the servers a rebuild renders at a time (spill.go);
	// 0 means its default. Tests set it to run many batches.
	rebuildBatch int
	// partsReadBack is the parts of index.json a publish reads back to find
	// one missing or damaged (checkParts); 0 means 64.
	partsReadBack int
	// replacedHeld is the files replaced a publish holds in temporary
	// files before it renames them mid-render (writer.replacePending); 0
	// means replacedHeld. Tests set it to make many batches.
	replacedHeld int
	// lookFor is the servers whose files a publish looks for
	// beyond those it renders (findLost); 0 means filesLookedFor.
	lookFor int
	// blocksChecked is the blocks of the site's record a publish checks
	// beyond those it reads (checkBlocks); 0 means blocksChecked, below
	// 0 none.
	blocksChecked int
	// decodeAll decodes every row of the site's record as it is read,
	// as a publish did before it decoded only those it touches, for a
	// test to compare the two.
	decodeAll bool
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
	if err := CheckContact(c.Contact); err != nil {
		return fmt.Errorf("site config: contact: %w", err)
	}
	return nil
}

// CheckContact reports whether contact can be the operator's address on
// the checks page: a bare e-mail address, "probe@example.org", without a
// display name. The error says what is wrong, for the caller to name its
// setting.
func CheckContact(contact string) error {
	if contact == "" {
		return errors.New("none given: the operator's e-mail address, which the checks page and probe.json give owners who want the checks stopped, is required")
	}
	a, err := mail.ParseAddress(contact)
	if err != nil || a.Name != "" || a.Address != contact {
		return fmt.Errorf("%q is not a bare e-mail address (like probe@example.org)", contact)
	}
	return nil
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return time.Now().UTC()
}

// writer is the writer of one publish: it flushes the file systems of the
// output and of the site's record.
func (c Config) writer() *writer {
	w := newWriter(c.OutDir, filepath.Dir(data.Dir(c.DataDir).SiteStore()))
	w.calls = c.calls
	w.held = cmp.Or(c.replacedHeld, replacedHeld)
	return w
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Stats says what one Publish did.
type Stats struct {
	Servers   int     // servers listed
	Rendered  int     // servers whose files were rendered
	Written   int     // files replaced because their bytes changed
	Unchanged int     // files rendered but left alone, identical
	Removed   int     // files removed: those of servers no longer listed, and records no longer needed
	Results   int     // results folded in
	RowsRead  int     // rows of the site's record decoded: those the run touched, every one when it read the lists
	Rebuilt   bool    // no site state was found: every server was rendered
	Bad       []error // inputs skipped: bad list rows, corrupt journal lines or Parquet files
	// Unpublished are the servers whose files could not be written or
	// removed: each costs itself only, the rest is published.
	Unpublished []Unpublished
	// ListBadUnread counts the bad rows of a ranked list unchanged since the
	// publish that read them (and named them in its Bad): they are still in
	// it.
	ListBadUnread int
	Took          time.Duration // wall time
}

// monthKeep is how far back results are folded in: the longest uptime
// window and a day of slack.
const monthKeep = record.MonthWindow + 24*time.Hour

// rebuildKeep is how far back a rebuild reads the history: the incidents
// of a year and a day of slack. An incremental run reads only what is new.
const rebuildKeep = record.IncidentKeep + 24*time.Hour

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
	p := &publication{cfg: cfg, log: cfg.logger(), now: cfg.now(), w: cfg.writer(), cand: map[string]bool{}, repair: map[string]bool{}, feedNew: map[string][]feed.Entry{}, pending: map[string][]data.Result{}}
	_, err = os.Stat(unfinishedPath(cfg.DataDir))
	p.killedBefore = err == nil
	if n, err := beginPublish(cfg.DataDir, cfg.OutDir); err != nil {
		return Stats{}, err
	} else if n > 0 {
		p.log.Warn("removed temporary files a killed publish left", "files", n, "out", cfg.OutDir)
	}
	err = p.run(ctx)
	if err != nil {
		p.w.discard()
	}
	switch {
	case err == nil:
		err = finishPublish(cfg.DataDir)
	case errors.Is(err, errCorrupt):
		err = p.stateDamaged(err)
	}
	p.stats.Written = int(p.w.written.Load())
	p.stats.Unchanged = int(p.w.unchanged.Load())
	p.stats.Removed = int(p.w.removed.Load())
	p.stats.Took = time.Since(start)
	if err != nil {
		return p.stats, err
	}
	p.log.Info("published", "servers", p.stats.Servers, "rendered", p.stats.Rendered, "written", p.stats.Written,
		"unchanged", p.stats.Unchanged, "removed", p.stats.Removed, "results", p.stats.Results, "rows_read", p.stats.RowsRead, "bad", len(p.stats.Bad),
		"unpublished", len(p.stats.Unpublished), "took", p.stats.Took)
	return p.stats, nil
}

// lockSite takes the lock of the site's record, waiting for another
// publisher to finish.
func lockSite(dataDir string) (unlock func() error, err error) {
	return durable.LockFile(filepath.Join(dataDir, "site", ".publish.lock"))
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
	forceLists   bool                   // read the lists although they did not change (lostRecords)
	repair       map[string]bool        // servers a file of which is missing (findLost): all written again
	sharedWith   map[string][]string    // with servers: the others at each shared address (data.SharedAddresses)
	states       map[string]data.State  // the data package's states, when rebuilding
	cand         map[string]bool        // ids to render
	pending      map[string][]data.Result
	removed      []string
	rendered     []int      // the rows rendered, in ascending order (renderAll)
	killedBefore bool       // the publish before was killed part-way (beginPublish)
	oldest       time.Time  // results started before are not read
	spill        *spill     // a rebuild's results by batch of servers, until rendered; nil when not rebuilding
	spillErr     error      // the first result that could not be spilled
	failMu       sync.Mutex // guards stats.Unpublished
	feedMu       sync.Mutex
	feedNew      map[string][]feed.Entry        // newest status changes of the servers rendered, by id
	pauses       map[string][]lists.PauseChange // the pause record, by id (recordPauses)
	mark         time.Time                      // end of the last step, for phase
}

func (p *publication) bad(err error) {
	p.log.Warn("skipped bad input", "err", err)
	p.stats.Bad = append(p.stats.Bad, err)
}

func (p *publication) run(ctx context.Context) error {
	p.phase("")
	st, err := loadStore(p.cfg.DataDir, p.now.UnixMilli(), p.cfg.blocksChecked)
	if err != nil {
		p.bad(fmt.Errorf("%w; rebuilding the site", err))
	}
	if st != nil {
		defer st.close()
		if p.cfg.decodeAll {
			if err := st.loadAll(); err != nil {
				return err
			}
		}
	}
	if _, err := os.Stat(filepath.Join(p.cfg.OutDir, "index.json")); err != nil && st != nil {
		// The published files are the records: without them, rebuild.
		p.log.Warn("no index.json in the output; rebuilding the site", "out", p.cfg.OutDir)
		st = nil
	}
	if st != nil {
		why, err := rebuildRequested(p.cfg.DataDir)
		if err != nil {
			return err
		}
		if why != "" {
			p.log.Warn("rebuilding the site, as the last publish asked", "why", why)
			st = nil
		}
	}
	if st == nil {
		st, p.stats.Rebuilt = newStore(), true
	}
	p.st = st
	p.phase("load state")
	if err := p.readLists(); err != nil {
		return err
	}
	p.stats.Servers = st.n()
	if err := p.recordPauses(); err != nil {
		return err
	}
	if p.stats.Rebuilt {
		states, bad, err := history.LoadStates(p.cfg.DataDir, p.now)
		for _, b := range bad {
			p.bad(b)
		}
		if err != nil {
			p.bad(err)
		}
		p.states = states
		for i := range st.n() {
			p.cand[st.idOf(i)] = true
		}
	}
	p.phase("lists")
	p.readLedger()
	p.phase("ledger")
	if p.stats.Rebuilt {
		// The whole history is read: held on disk by batch of servers,
		// not in memory (spill.go).
		sp, err := newSpill(p.cfg.DataDir, st.n(), p.cfg.rebuildBatch)
		if err != nil {
			return err
		}
		p.spill = sp
		defer func() {
			if err := sp.remove(); err != nil {
				p.log.Warn("could not remove the rebuild's spill", "err", err)
			}
		}()
	}
	if p.stats.Rebuilt {
		if err := p.w.writeAfresh(p.cfg.OutDir, serverDirs...); err != nil {
			return err
		}
	}
	if err := p.readResults(); err != nil {
		return err
	}
	if err := p.takeUnpublished(); err != nil {
		return err
	}
	p.phase("results")
	p.backfillFacts()
	// The rows that expire by now were decoded as the record was read
	// (readStore): the others are not looked at.
	nowMS := p.now.UnixMilli()
	for i := range st.decoded() {
		if r := st.row(i); r.Expires != 0 && r.Expires <= nowMS {
			p.cand[st.id(r)] = true
		}
	}
	if !p.stats.Rebuilt {
		p.findLost()
	}
	if p.servers == nil && p.lostRecords() {
		// A server file went missing while the lists stayed the same: its
		// address and listing come from the list, read once more.
		p.forceLists = true
		if err := p.readLists(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.renderAll(ctx); err != nil {
		return err
	}
	p.phase("render")
	if p.stats.Rebuilt {
		if err := p.sweepUnlisted(); err != nil {
			return err
		}
	}
	for _, id := range p.removed {
		if err := p.removeServer(id); err != nil {
			p.unpublished(-1, id, err)
		}
	}
	if err := p.pruneRetired(); err != nil {
		return err
	}
	if err := p.writeShared(); err != nil {
		return err
	}
	p.phase("shared")
	if err := p.carryUnpublished(); err != nil {
		return err
	}
	if p.stats.Rebuilt {
		p.w.removeAfter(rebuildPath(p.cfg.DataDir)) // done, once all of it is durable
	} else if err := p.requestRebuild(); err != nil {
		return err
	}
	// The record is moved into place after index.json, status.json and
	// the unpublished results, and all of them only once every file they
	// point at is durable: a crash before leaves the previous record,
	// whose next publish renders the same servers again (in a rebuild, no
	// index.json: a rebuild).
	// Without the lists read, the rows rendered are the only ones that
	// may have changed (readLedger makes candidates of those it changes).
	var touched []int
	if p.servers == nil && !p.stats.Rebuilt {
		touched = p.rendered
	}
	if err := st.save(p.w, p.cfg.DataDir, touched); err != nil {
		return err
	}
	p.stats.RowsRead = st.decodedRows()
	err = p.w.flush()
	p.phase("flush")
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
