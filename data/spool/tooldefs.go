package spool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/durable"
)

// ToolDef is one tool definition a check listed: the fields its
// fingerprint covers. InputSchema and Annotations are canonical JSON
// (object keys sorted, no white space), or empty when the server sent none.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// MaxToolDefsBytes bounds one stored definition set: the 1 MB answer the
// definitions came in (rule N9). A larger set keeps its fingerprint in the
// history but is not stored.
const MaxToolDefsBytes = 1 << 20

// FingerprintTools returns the canonical JSON of a set of tool
// definitions (sorted by name, then as listed) and its SHA-256 in hex: two
// checks that listed the same definitions, in any order, give the same
// hash. It returns "" and nil for no definitions.
func FingerprintTools(defs []ToolDef) (hash string, canonical []byte) {
	if len(defs) == 0 {
		return "", nil
	}
	sorted := slices.Clone(defs)
	slices.SortStableFunc(sorted, func(a, b ToolDef) int { return strings.Compare(a.Name, b.Name) })
	canonical, err := json.Marshal(sorted)
	if err != nil {
		// RawMessage fields that are not JSON: the check built them
		// with json.Marshal, so this cannot happen.
		panic(fmt.Sprintf("fingerprint tools: %v", err))
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), canonical
}

var toolsHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// PutToolDefs stores a definition set under its hash unless it is there
// already or larger than MaxToolDefsBytes; the file is written atomically,
// so a reader never sees half a set. at is when the check listed it, on the
// prober's clock (not the wall clock, so a simulated year prunes as a real
// one does): the file's time, which PruneToolDefs reads.
func PutToolDefs(dir, hash string, canonical []byte, at time.Time) error {
	if !toolsHashRE.MatchString(hash) || len(canonical) > MaxToolDefsBytes {
		return nil
	}
	path := data.Dir(dir).ToolDefSet(hash)
	if fi, err := os.Stat(path); err == nil {
		// Still listed: its time moves on (once a day at most), so
		// PruneToolDefs keeps it.
		if at.Sub(fi.ModTime()) > 24*time.Hour {
			if err := os.Chtimes(path, at, at); err != nil {
				return fmt.Errorf("store tool definitions %s: %w", hash, err)
			}
		}
		return nil
	}
	if err := os.MkdirAll(data.Dir(dir).ToolDefs(), 0o755); err != nil {
		return fmt.Errorf("store tool definitions %s: %w", hash, err)
	}
	if err := durable.WriteFileAtomic(path, canonical, 0o644); err != nil {
		return err
	}
	if err := os.Chtimes(path, at, at); err != nil {
		return fmt.Errorf("store tool definitions %s: %w", hash, err)
	}
	return nil
}

// ToolDefsKeep is how long a definition set no check has listed is kept:
// the year a server's changes are shown, and a month more.
const ToolDefsKeep = 395 * 24 * time.Hour

// PruneToolDefs removes the definition sets no check has listed for
// ToolDefsKeep before now (PutToolDefs moves a listed set's time on), so the
// store holds what the site can still show, not every set ever seen. It
// returns how many it removed.
func PruneToolDefs(dir string, now time.Time) (int, error) {
	entries, err := os.ReadDir(data.Dir(dir).ToolDefs())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("prune tool definitions: %w", err)
	}
	n := 0
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) <= ToolDefsKeep {
			continue
		}
		if err := os.Remove(filepath.Join(data.Dir(dir).ToolDefs(), e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("prune tool definitions: %w", err)
		}
		n++
	}
	return n, nil
}

// ErrNoToolDefs is returned by ReadToolDefs for a hash whose set is not
// stored (never stored, or larger than MaxToolDefsBytes).
var ErrNoToolDefs = errors.New("tool definitions not stored")

// ReadToolDefs returns the definition set stored under hash. A set whose
// bytes do not match its hash is an error naming the file.
func ReadToolDefs(dir, hash string) ([]ToolDef, error) {
	if !toolsHashRE.MatchString(hash) {
		return nil, fmt.Errorf("read tool definitions %q: %w", hash, ErrNoToolDefs)
	}
	path := data.Dir(dir).ToolDefSet(hash)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read tool definitions %s: %w", hash, ErrNoToolDefs)
	}
	if err != nil {
		return nil, fmt.Errorf("read tool definitions: %w", err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hash {
		return nil, fmt.Errorf("read tool definitions %s: content does not match its hash", path)
	}
	var defs []ToolDef
	if err := json.Unmarshal(b, &defs); err != nil {
		return nil, fmt.Errorf("read tool definitions %s: %w", path, err)
	}
	return defs, nil
}
