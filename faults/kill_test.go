package faults

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/internal/durable"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site"
)

// childEnv names, for the test binary re-executed as a child process.
const (
	childMode = "FAULTS_TEST_CHILD" // "publish": publish FAULTS_TEST_ROOT once
	childRoot = "FAULTS_TEST_ROOT"
)

func TestMain(m *testing.M) {
	if os.Getenv(childMode) == "publish" {
		if _, err := site.Publish(context.Background(), siteConfig(os.Getenv(childRoot))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// siteConfig is the publish of the directory root: data/, servers.csv, out/.
func siteConfig(root string) site.Config {
	return site.Config{Contact: "probe@example.org", DataDir: filepath.Join(root, "data"), ServersPath: filepath.Join(root, "servers.csv"),
		OutDir: filepath.Join(root, "out"), Now: func() time.Time { return minute0 }, Logger: slog.New(slog.DiscardHandler), Workers: 2}
}

// hasTemporary reports whether the directory dir holds a temporary file.
func hasTemporary(tb testing.TB, dir string) bool {
	tb.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if durable.IsTempName(e.Name()) {
			return true
		}
	}
	return false
}

// temporaries returns the temporary files under out.
func temporaries(tb testing.TB, out string) []string {
	tb.Helper()
	var tmps []string
	filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && durable.IsTempName(d.Name()) {
			tmps = append(tmps, path)
		}
		return nil
	})
	return tmps
}

// TestKilledPublish kills a real publish process, by its PID, as soon as
// a temporary file shows in the output of its publish of 2,000 servers,
// each with a new result, until a kill has left temporary files in the
// output (a server's file is temporary until the publish's flush, so the
// first kill mostly does) and a second kill landed among the index's
// parts: the next publish removes every one, and the site is whole again.
// After every kill, index.json names only parts that are there, whole.
// site's TestPublishRemovesTemporaryFilesOfAKilledPublish proves the
// same without the luck of the kill.
func TestKilledPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 2,000 servers several times: full mode only, make test runs it")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	var servers []data.Server
	for i := range 2000 {
		id := fmt.Sprintf("s%05d", i)
		servers = append(servers, data.Server{ID: id, Rank: i + 1, URL: "https://h" + fmt.Sprint(i%300) + ".example/" + id, Added: minute0.Add(-48 * time.Hour)})
	}
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, servers); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "servers.csv"), buf.Bytes(), 0o644)
	// results journals a check of every server, k minutes before minute0:
	// a publish then rewrites every server's files.
	results := func(k int) {
		j, err := spool.CreateJournal(dir, fmt.Sprintf("run-%d", k))
		if err != nil {
			t.Fatal(err)
		}
		// Appended side by side, as a run's checks end: lines appended
		// together share an fsync, rather than 2,000 of them.
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < len(servers); i += 16 {
					s := servers[i]
					at := minute0.Add(-time.Duration(100-k)*time.Minute + time.Duration(i)*time.Millisecond)
					if err := j.Append(data.Result{ID: s.ID, URL: s.URL, Host: s.Host(), Status: data.Outcomes[(i+k)%5], Started: at, Finished: at.Add(time.Second)}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		j.Close()
	}
	results(0)
	if _, err := site.Publish(context.Background(), siteConfig(root)); err != nil {
		t.Fatal(err)
	}
	var leftBehind, kills int
	// Odd kills land among the server files, even ones among the parts
	// of the index, written before the head that names them moves.
	for k := 1; (leftBehind == 0 || k <= 2) && k <= 6; k++ {
		watch := filepath.Join(root, "out", "servers")
		if k%2 == 0 {
			watch = filepath.Join(root, "out", "index")
		}
		kills++
		// Not a rebuild, which sweeps the output anyway: the site's
		// record and index stand, and every server has a new result.
		results(k)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(testutil.ChildEnv(t), childMode+"=publish", childRoot+"="+root)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed the moment a temporary file shows in the output, however
		// slow a loaded machine makes the child's start: not at a time
		// that may fall before its first write or after its last.
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		for waiting := true; waiting; {
			select {
			case <-exited:
				waiting = false
			case <-time.After(time.Millisecond):
				if hasTemporary(t, watch) {
					cmd.Process.Kill() // SIGKILL, by its PID
					<-exited
					waiting = false
				}
			}
		}
		left := temporaries(t, filepath.Join(root, "out"))
		leftBehind += len(left)
		// The head never names a part that is not there, whole: parts
		// are flushed before it moves, and removed only after.
		if _, err := site.ReadIndex(filepath.Join(root, "out")); err != nil {
			t.Fatalf("kill %d: the index left: %v", k, err)
		}
		st, err := site.Publish(context.Background(), siteConfig(root))
		if err != nil {
			t.Fatalf("kill %d: the next publish: %v", k, err)
		}
		idx, err := site.ReadIndex(filepath.Join(root, "out"))
		if err != nil || len(idx.Rows) != len(servers) {
			t.Fatalf("kill %d: the index after the next publish: %d rows, %v", k, len(idx.Rows), err)
		}
		if parts, _ := os.ReadDir(filepath.Join(root, "out", "index")); len(parts) != len(idx.Parts) {
			t.Fatalf("kill %d: after the next publish, %d files in index/, %d parts named", k, len(parts), len(idx.Parts))
		}
		if tmps := temporaries(t, filepath.Join(root, "out")); len(tmps) > 0 {
			t.Fatalf("kill %d left %d temporary files; after the next publish still %v", k, len(left), tmps)
		}
		if _, err := os.Stat(filepath.Join(root, "out", "servers", "s01999.json")); err != nil || st.Servers != len(servers) {
			t.Fatalf("kill %d: after the next publish: %+v, %v", k, st, err)
		}
	}
	if leftBehind == 0 {
		t.Skipf("none of %d kills landed between a temporary file and its rename", kills)
	}
	t.Logf("%d kills left %d temporary files in the output; the next publish removed every one", kills, leftBehind)
}
