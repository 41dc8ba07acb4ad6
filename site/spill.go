package site

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/s2"
	"plug.directory/prober/data"
)

// A rebuild reads the whole history, a year of every server's checks:
// more than memory holds at scale. It writes each result it reads to a
// spill file of the batch of servers it belongs to (batches of
// consecutive ids), in the order read, and then renders one batch at a
// time with only that batch's results in memory (renderAll). A server's
// results, read back in the order they were written, are those it would
// have had in memory, in the same order: the files are the same. The
// files are JSON lines compressed with S2 in blocks of spillBlock (the
// benchmark's results: 1,027 bytes of JSON each, 61 compressed; the
// history holds 88 bytes a check in Parquet), so the spill takes about the
// disk the history does, and its open files little memory.

// spillBatchServers is the servers of a batch, and spillMaxBatches the
// most batches (spill files open at once): the results in memory at a
// time are those of max(spillBatchServers, servers/spillMaxBatches)
// servers.
const (
	spillBatchServers = 2048
	spillMaxBatches   = 256
	spillBlock        = 64 << 10
)

// spillPrefix names the directory of a rebuild's spill under DATA/site;
// one a killed rebuild left is removed by the next rebuild.
const spillPrefix = "rebuild-spill-"

// spill holds a rebuild's results by batch of servers until rendered.
type spill struct {
	dir   string
	batch int // servers of a batch: rows [k*batch, (k+1)*batch) are batch k
	files []*os.File
	zs    []*s2.Writer
	count []int // results written, by batch
}

// newSpill returns the spill of a rebuild of servers rows, in batches of
// batch servers (0: spillBatchServers, or more to keep to
// spillMaxBatches), removing what a killed rebuild left.
func newSpill(dataDir string, servers, batch int) (*spill, error) {
	if err := removeSpills(dataDir); err != nil {
		return nil, err
	}
	siteDir := filepath.Join(dataDir, "site")
	if batch <= 0 {
		batch = max(spillBatchServers, (servers+spillMaxBatches-1)/spillMaxBatches)
	}
	if err := os.MkdirAll(siteDir, 0o755); err != nil {
		return nil, fmt.Errorf("create rebuild spill: %w", err)
	}
	dir, err := os.MkdirTemp(siteDir, spillPrefix)
	if err != nil {
		return nil, fmt.Errorf("create rebuild spill: %w", err)
	}
	n := max(1, (servers+batch-1)/batch)
	return &spill{dir: dir, batch: batch, files: make([]*os.File, n), zs: make([]*s2.Writer, n), count: make([]int, n)}, nil
}

// removeSpills removes the spills killed rebuilds left in dataDir.
func removeSpills(dataDir string) error {
	old, _ := filepath.Glob(filepath.Join(dataDir, "site", spillPrefix+"*"))
	for _, d := range old {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("remove rebuild spill %s: %w", d, err)
		}
	}
	return nil
}

// batches returns the number of batches.
func (s *spill) batches() int { return len(s.count) }

// add writes r, of the server of row i, to its batch's file.
func (s *spill) add(i int, r data.Result) error {
	k := i / s.batch
	if s.files[k] == nil {
		f, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("batch-%04d.jsonl", k)))
		if err != nil {
			return fmt.Errorf("spill results: %w", err)
		}
		s.files[k], s.zs[k] = f, s2.NewWriter(f, s2.WriterBlockSize(spillBlock), s2.WriterConcurrency(1))
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("spill result of %s: %w", r.ID, err)
	}
	s.count[k]++
	if _, err := s.zs[k].Write(append(b, '\n')); err != nil {
		return fmt.Errorf("spill results: %w", err)
	}
	return nil
}

// load returns the results of batch k by server id, each server's in the
// order added. Nothing is added after a load.
func (s *spill) load(k int) (map[string][]data.Result, error) {
	out := map[string][]data.Result{}
	f := s.files[k]
	if f == nil {
		return out, nil
	}
	if err := s.zs[k].Close(); err != nil {
		return nil, fmt.Errorf("spill results: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read spilled results: %w", err)
	}
	dec := json.NewDecoder(s2.NewReader(f, s2.ReaderMaxBlockSize(spillBlock)))
	for range s.count[k] {
		var r data.Result
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("read spilled results %s: %w", f.Name(), err)
		}
		out[r.ID] = append(out[r.ID], r)
	}
	return out, nil
}

// remove closes and removes the spill's files.
func (s *spill) remove() error {
	var errs []error
	for _, f := range s.files {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	errs = append(errs, os.RemoveAll(s.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove rebuild spill: %w", err)
	}
	return nil
}
