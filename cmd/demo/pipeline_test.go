package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site"
)

// wantStatus is what each demo server must show once the pipeline has run,
// by the readable part of its id: every status of table O.
var wantStatus = map[string]data.Outcome{
	"docs":     data.Working,      // 2026-07-28 (N4: server/discover)
	"issues":   data.Working,      // 2025-11-25 (N4: initialize)
	"weather":  data.Working,      // legacy HTTP+SSE (N4)
	"notes":    data.Working,      // three servers on one host (S3)
	"calendar": data.Working,      //
	"files":    data.Working,      //
	"crm":      data.NeedsKey,     // 401 with resource_metadata (O)
	"search":   data.Refused,      // 429 with Retry-After (O)
	"billing":  data.Failing,      // 500 (O)
	"reports":  data.Failing,      // never answers: the deadline (N10)
	"desktop":  data.NotCheckable, // no address (O)
	"archive":  data.Paused,       // on the paused list (S8, P4)
	"fresh":    data.Pending,      // listed after the plan (O)
}

// TestDemo runs the demo as `make demo` does, with the commands built from
// this tree and a 3 s check deadline for the server that never answers:
// first a run stopped by Ctrl-C while it waits for its minute, which must
// stop at once; then a full run in the same directory, after which every
// server's published status must be the one its fleet server makes, every
// status of table O must show, and the paused and late servers must have
// had no check; then every page it published is checked in a browser.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands and runs the fleet for up to a minute; make test runs it")
	}
	t.Parallel()
	bin := buildCommands(t)
	dir := filepath.Join(t.TempDir(), "demo-out")

	t.Run("ctrl_c_stops_everything", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := newSyncBuffer("2. run the minute")
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"-bin", bin, "-dir", dir, "-timeout", "3s"}, out, out) }()
		select {
		case <-out.seen:
		case err := <-done:
			t.Fatalf("the demo ended before its run step: %v\n%s", err, out)
		case <-time.After(60 * time.Second):
			t.Fatalf("the demo did not reach its run step\n%s", out)
		}
		cancel()
		stopped := time.Now()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "run stopped") {
				t.Errorf("error %v, want the run step stopped", err)
			}
		case <-time.After(stopGrace + 5*time.Second):
			t.Fatalf("the demo did not stop after Ctrl-C\n%s", out)
		}
		if d := time.Since(stopped); d > stopGrace {
			t.Errorf("stopping took %s: the run command did not stop on its interrupt", d)
		}
	})

	t.Run("full_run_every_status", func(t *testing.T) {
		out := newSyncBuffer("")
		start := time.Now()
		if err := run(context.Background(), []string{"-bin", bin, "-dir", dir, "-timeout", "3s"}, out, out); err != nil {
			t.Fatalf("demo: %v\n%s", err, out)
		}
		t.Logf("the demo took %s\n%s", time.Since(start).Round(time.Second), out)

		index, err := site.ReadIndex(filepath.Join(dir, "site"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]data.Outcome{}
		for _, r := range index.Rows {
			name, _, _ := strings.Cut(r.ID, "-")
			got[name] = r.Status
		}
		for name, want := range wantStatus {
			if got[name] != want {
				t.Errorf("O: %s shows %q, want %q", name, got[name], want)
			}
		}
		if len(got) != len(wantStatus) {
			t.Errorf("index lists %d servers, want %d: %v", len(got), len(wantStatus), got)
		}

		results, bad, err := history.ReadHistory(filepath.Join(dir, "data"), time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		if err != nil || len(bad) > 0 {
			t.Fatalf("read history: %v %v", err, bad)
		}
		checked := map[string]int{}
		for _, r := range results {
			name, _, _ := strings.Cut(r.ID, "-")
			checked[name]++
		}
		for name, want := range wantStatus {
			n := checked[name]
			switch {
			case (want == data.Paused || want == data.Pending) && n != 0:
				t.Errorf("S8: %s was checked %d times", name, n)
			case want != data.Paused && want != data.Pending && n != 1:
				t.Errorf("%s was checked %d times, want once", name, n)
			}
		}
		if !strings.Contains(out.String(), "received no request at all") {
			t.Errorf("the summary does not say the paused server received nothing\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(dir, "site", "index.html")); err != nil {
			t.Errorf("no HTML preview: %v", err)
		}
	})

	// Every page the demo published, in headless Chromium at 390 and 1280
	// px with axe-core: the pages of a real publish, with the tool
	// fingerprints, certificates and challenges real servers give.
	t.Run("pages_in_browser", func(t *testing.T) {
		b := testutil.MustBrowser(t)
		axe := testutil.MustAxe(t)
		site := filepath.Join(dir, "site")
		if pages := testutil.CheckPages(t, b, axe, site); len(pages) != 2+len(wantStatus) {
			t.Errorf("checked %d pages, want the index, the checks page and %d servers' pages: %v", len(pages), len(wantStatus), pages)
		}
		if *screenshots != "" {
			shoot(t, b, site, *screenshots)
		}
	})
}

// screenshots, when set, is where TestDemo writes the pictures of the
// pages it published (`make screenshots` sets it to docs/screenshots).
var screenshots = flag.String("screenshots", "", "write screenshots of the demo's pages at 390 and 1280 px into this directory")

// shotHeight is the most of a page a screenshot shows, from its top: what
// a reader sees first, in a picture the README can show.
const shotHeight = 1600

// shoot writes screenshots of the index and of a server of each kind the
// README shows, at each width, named for the page and the width
// (servers-docs-390.png): a working server, one that needs a key, one
// failing with an answer.
func shoot(t *testing.T, b *testutil.Browser, site, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{"index": "index.html"}
	entries, err := os.ReadDir(filepath.Join(site, "servers"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".html")
		name, _, _ := strings.Cut(id, "-")
		if ok && (name == "docs" || name == "crm" || name == "billing") {
			pages["servers-"+name] = "servers/" + e.Name()
		}
	}
	if len(pages) != 4 {
		t.Fatalf("pages to shoot: %v, want the index, docs, crm and billing", pages)
	}
	for name, page := range pages {
		for _, w := range testutil.Windows {
			if err := b.Open(filepath.Join(site, filepath.FromSlash(page)), w.Width, w.Height); err != nil {
				t.Fatal(err)
			}
			if err := b.Screenshot(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, w.Width)), shotHeight); err != nil {
				t.Fatal(err)
			}
		}
	}
}
