package site

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// TestPublishUnwritableServer takes one server's file path away (a
// directory where servers/bravo.json goes, as an id "bravo.json/x" made
// before ids were checked): that server costs itself only (rules O,
// P1). The publish succeeds, the other servers and the
// shared files are written, status.json names bravo with a reason that
// names no path outside the site, and once the path is free again the next
// publish writes bravo without being told.
func TestPublishUnwritableServer(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	blocker := filepath.Join(f.out, "servers", "bravo.json")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	st := f.MustPublish()
	if _, err := os.Stat(data.Dir(f.dir).SiteUnpublished()); err != nil {
		t.Errorf("bravo's results are not kept for the next publish: %v", err)
	}
	if len(st.Unpublished) != 1 || st.Unpublished[0].ID != "bravo" {
		t.Fatalf("unpublished %v, want bravo alone", st.Unpublished)
	}
	for _, s := range fixServers {
		if s.ID == "bravo" {
			continue
		}
		for _, rel := range publicFiles(s.ID) {
			if _, err := os.Stat(filepath.Join(f.out, rel)); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		}
	}
	var status record.Status
	mustReadJSON(t, filepath.Join(f.out, "status.json"), &status)
	if len(status.Unpublished) != 1 || status.Unpublished[0].ID != "bravo" ||
		!strings.Contains(status.Unpublished[0].Reason, "servers/bravo.json") || strings.Contains(status.Unpublished[0].Reason, f.out) {
		t.Errorf("status.json unpublished %+v; want bravo, its reason naming servers/bravo.json relative to the site", status.Unpublished)
	}
	if _, err := os.Stat(filepath.Join(f.out, "index.json")); err != nil {
		t.Errorf("index.json: %v", err)
	}
	validateTree(t, f.out)

	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Minute)
	if st := f.MustPublish(); len(st.Unpublished) != 0 {
		t.Errorf("unpublished %v once the path is free", st.Unpublished)
	}
	// The results read while bravo could not be written were carried to
	// this publish: its page shows its last check, not "not checked yet".
	if sf := readServerFile(t, f, "bravo"); sf.Status != data.NeedsKey || sf.LastResult == nil {
		t.Errorf("bravo after the path is free: %s, last result %v; want needs_key", sf.Status, sf.LastResult)
	}
	if _, err := os.Stat(data.Dir(f.dir).SiteUnpublished()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the carried results are still kept once published: %v", err)
	}
	mustReadJSON(t, filepath.Join(f.out, "status.json"), &status)
	if len(status.Unpublished) != 0 {
		t.Errorf("status.json still names %+v", status.Unpublished)
	}
}
