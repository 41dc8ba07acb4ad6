package site

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/internal/testutil"
)

// TestPublishLostRecord: a checked server whose published file (its
// record) is deleted from the output or damaged is never published afresh
// as never checked. The publish that finds it leaves the server as it was
// (its row in the index, its new result carried), names its file in the
// log and in status.json, and asks the next publish to rebuild the site
// from the history; the next publish does, and the server's files are then
// the bytes of a site where nothing was lost. A file deleted from a server
// with no new result is found by the window of files each publish looks
// for.
func TestPublishLostRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		id     string
		result bool   // alpha has a new result in the publish that finds it
		want   string // in the error status.json gives the server
	}{
		{"deleted", func(t *testing.T, path string) { mustRemove(t, path) }, "alpha", true, "servers/alpha.json is missing"},
		{"damaged", func(t *testing.T, path string) { cutShort(t, path) }, "alpha", true, "servers/alpha.json is damaged: unexpected end of JSON input"},
		// JSON still, but not a record: a status of a check no decoder
		// knows, a time that does not parse. Such a server was held
		// unpublished every minute, with no rebuild asked for.
		{"unknown_status", func(t *testing.T, path string) { edit(t, path, `"working","working"`, `"working","workinf"`) }, "alpha", true,
			"servers/alpha.json is damaged: read history: unknown outcome"},
		{"time_not_a_time", func(t *testing.T, path string) { edit(t, path, `"last_check":"2026-`, `"last_check":"2O26-`) }, "alpha", true,
			"servers/alpha.json is damaged: read time: parsing time"},
		// bravo, checked daily, is not rendered again for hours but for
		// the window.
		{"deleted_not_checked_since", func(t *testing.T, path string) { mustRemove(t, path) }, srvKey.ID, false, "servers/bravo.json is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, ctl := newStandard(t), newStandard(t) // ctl: nothing lost
			f.MustPublish()
			ctl.MustPublish()
			before := readServerFile(t, f, tc.id)
			tc.damage(t, filepath.Join(f.out, "servers", tc.id+".json"))
			for _, x := range []*fixture{f, ctl} {
				// Without a result, a minute on: nothing else of alpha's
				// changes, so the window of files looked for finds it.
				x.now = x.now.Add(time.Minute)
				if tc.result {
					x.now = x.now.Add(time.Hour)
					x.results(result(srvWorking, x.now.Add(-time.Minute), data.Working, ""))
				}
			}
			var logs bytes.Buffer
			cfg := f.config()
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.lookFor = 100 // every row of the fixture
			st, err := Publish(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if st.Rebuilt {
				t.Fatal("the publish that found the record lost rebuilt already")
			}
			var found bool
			for _, u := range st.Unpublished {
				found = found || (u.ID == tc.id && errors.Is(u.Err, errRecordLost) && strings.Contains(u.Err.Error(), tc.want))
			}
			if !found {
				t.Errorf("unpublished = %v, want %s's record named lost (%q)", st.Unpublished, tc.id, tc.want)
			}
			if !strings.Contains(logs.String(), "the next publish rebuilds the site from the history") {
				t.Errorf("the log does not say the site is rebuilt next:\n%s", logs.String())
			}
			if b, err := os.ReadFile(filepath.Join(f.out, "status.json")); err != nil || !strings.Contains(string(b), tc.want) {
				t.Errorf("status.json does not name %s's record lost (%q): %v\n%s", tc.id, tc.want, err, b)
			}
			idx, err := ReadIndex(f.out)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range idx.Rows {
				if r.ID == tc.id && r.Status != before.Status {
					t.Errorf("%s's row says %s after its record was lost, want %s as published", tc.id, r.Status, before.Status)
				}
			}
			ctl.MustPublish()

			f.now, ctl.now = f.now.Add(time.Minute), ctl.now.Add(time.Minute)
			if st := f.MustPublish(); !st.Rebuilt {
				t.Fatal("the publish after the record was found lost did not rebuild the site")
			}
			ctl.MustPublish()
			if _, err := os.Stat(rebuildPath(f.dir)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the rebuild left its request: %v", err)
			}
			sameServerFiles(t, f, ctl, tc.id, "after the rebuild differs from a site where nothing was lost")
			if after := readServerFile(t, f, tc.id); len(after.History) < len(before.History) {
				t.Errorf("%s has %d checks after the rebuild, %d before its record was lost", tc.id, len(after.History), len(before.History))
			}
			f.now = f.now.Add(time.Minute)
			if st := f.MustPublish(); st.Rebuilt {
				t.Error("the publish after the rebuild rebuilt again")
			}
		})
	}
}

// sameServerFiles fails t for each file of the server id in f's output
// that differs from ctl's, saying how.
func sameServerFiles(t *testing.T, f, ctl *fixture, id, how string) {
	t.Helper()
	for _, rel := range serverSet(id) {
		got, err := os.ReadFile(filepath.Join(f.out, rel))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(ctl.out, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s %s:\n%.400s\nwant\n%.400s", rel, how, got, want)
		}
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// edit replaces the first old in the file at path with new.
func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("no %s in %s", old, path)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPublishFlippedRecord flips a random byte of a server's published
// file, as a disk or another program may, before a publish that renders
// it: the file either still reads as its record (a digit of a figure
// changed: nothing can tell) or its record is named lost and the next
// publish rebuilds it to the bytes of a site where nothing was flipped.
// No flip panics the publish, fails it, or holds the server unpublished
// for any other reason.
func TestPublishFlippedRecord(t *testing.T) {
	t.Parallel()
	flips := 40
	if testing.Short() {
		flips = 10
	}
	ctl := newStandard(t) // nothing flipped: what the rebuild must give
	ctl.MustPublish()
	step := func(f *fixture) {
		f.now = f.now.Add(time.Hour)
		f.results(result(srvWorking, f.now.Add(-time.Minute), data.Working, ""))
	}
	step(ctl)
	ctl.MustPublish()
	ctl.now = ctl.now.Add(time.Minute)
	ctl.MustPublish()
	want := map[string][]byte{}
	for _, rel := range serverSet(srvWorking.ID) {
		b, err := os.ReadFile(filepath.Join(ctl.out, rel))
		if err != nil {
			t.Fatal(err)
		}
		want[rel] = b
	}

	rng := rand.New(rand.NewPCG(35, 7))
	var lost, unseen int
	for i := range flips {
		f := newStandard(t)
		f.MustPublish()
		path := filepath.Join(f.out, "servers", srvWorking.ID+".json")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		at := rng.IntN(len(b))
		b[at] ^= byte(1 + rng.IntN(255))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("flip %d, byte %d: %q", i, at, b[max(0, at-16):min(len(b), at+16)])
		step(f)
		st := f.MustPublish()
		switch {
		case len(st.Unpublished) == 0:
			unseen++
			continue
		case len(st.Unpublished) > 1 || !errors.Is(st.Unpublished[0].Err, errRecordLost):
			t.Fatalf("%s: unpublished %v, want the record named lost or nothing", what, st.Unpublished)
		}
		lost++
		f.now = f.now.Add(time.Minute)
		if st := f.MustPublish(); !st.Rebuilt || len(st.Unpublished) > 0 {
			t.Fatalf("%s: the publish after: rebuilt %v, unpublished %v", what, st.Rebuilt, st.Unpublished)
		}
		for rel, w := range want {
			if got, err := os.ReadFile(filepath.Join(f.out, rel)); err != nil || !bytes.Equal(got, w) {
				t.Fatalf("%s: %s after the rebuild differs from a site where nothing was flipped (%v):\n%s\nwant\n%s", what, rel, err, got, w)
			}
		}
	}
	t.Logf("%d flips: %d records named lost and rebuilt, %d still read as a record", flips, lost, unseen)
	if lost == 0 {
		t.Error("no flip was found: the test flips nothing that matters")
	}
}

// TestPublishSharedFileRepaired: a file about every server (index.json,
// feed.atom, the checks page, the stylesheet...) damaged or deleted in the
// output, with nothing new to publish, is read back in its turn and
// written again within as many minutes as there are such files, the bytes
// a site where nothing was damaged has, named in the log. Before, it
// stayed as it was until what it holds changed.
func TestPublishSharedFileRepaired(t *testing.T) {
	t.Parallel()
	for _, name := range sharedFiles {
		for _, damage := range []struct {
			name string
			do   func(t *testing.T, path string)
		}{{"flipped", flipMiddle}, {"deleted", mustRemove}} {
			if name == "index.json" && damage.name == "deleted" {
				continue // a site without index.json is rebuilt
			}
			t.Run(name+"/"+damage.name, func(t *testing.T) {
				t.Parallel()
				f, ctl := newStandard(t), newStandard(t)
				f.MustPublish()
				ctl.MustPublish()
				path := filepath.Join(f.out, name)
				was := mustRead(t, filepath.Join(ctl.out, name))
				damage.do(t, path)
				var logs bytes.Buffer
				cfg := f.config()
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				for m := 1; m <= len(sharedFiles); m++ {
					f.now, ctl.now = f.now.Add(time.Minute), ctl.now.Add(time.Minute)
					if _, err := Publish(context.Background(), cfg); err != nil {
						t.Fatal(err)
					}
					ctl.MustPublish()
					want := mustRead(t, filepath.Join(ctl.out, name))
					if got, err := os.ReadFile(path); err == nil && string(got) == want {
						// One that changes anyway (status.json says when) is
						// written so; one that does not, by its turn.
						if damage.name == "flipped" && want == was && !strings.Contains(logs.String(), "a shared file is not what was written") {
							t.Errorf("written again without a word in the log:\n%s", logs.String())
						}
						return
					}
				}
				t.Errorf("%s not as written within %d minutes", name, len(sharedFiles))
			})
		}
	}
}

// flipMiddle flips the bits of the middle byte of the file at path.
func flipMiddle(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cutShort keeps the first half of the file at path.
func cutShort(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPublishMissingFileRepaired: a server's page, strip, feed or badge
// deleted from the output, its server with nothing new, is found by the
// window of files each publish looks for and written again, the bytes it
// had, named in the log, without a rebuild; with a window of one server a
// publish, within as many minutes as there are servers. So is a file of a
// directory deleted whole.
func TestPublishMissingFileRepaired(t *testing.T) {
	t.Parallel()
	rels := serverSet(srvKey.ID)[1:]
	for k, rel := range append(rels, rels[1]) {
		whole := k == len(rels)
		name := filepath.Base(filepath.Dir(rel))
		if whole {
			name += "_directory"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newStandard(t)
			f.MustPublish()
			path := filepath.Join(f.out, rel)
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if whole {
				if err := os.RemoveAll(filepath.Dir(path)); err != nil {
					t.Fatal(err)
				}
			} else {
				mustRemove(t, path)
			}
			var logs bytes.Buffer
			cfg := f.config()
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.lookFor = 1
			servers := 7 // the standard fixture's
			for m := 1; m <= servers; m++ {
				f.now = f.now.Add(time.Minute)
				st, err := Publish(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if st.Rebuilt || len(st.Unpublished) > 0 {
					t.Fatalf("minute %d: rebuilt %v, unpublished %v", m, st.Rebuilt, st.Unpublished)
				}
				if _, err := os.Stat(path); err == nil {
					break
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%s not written again within %d minutes: %v", rel, servers, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s written again as\n%s\nwant\n%s", rel, got, want)
			}
			if !strings.Contains(logs.String(), "a server's file is missing; writing it again") || !strings.Contains(logs.String(), rel) {
				t.Errorf("the log does not name %s:\n%s", rel, logs.String())
			}
		})
	}
}

// TestPublishMissingFileRepairedNested: the files of a server whose id
// has slashes are in directories of their own (servers/acme/tools.json);
// one of them deleted is found there and written again, its path in the
// log, as any other.
func TestPublishMissingFileRepairedNested(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := data.Server{ID: "acme/mcp/tools", Rank: 1, URL: "https://acme.example.com/mcp", Added: fixNow.Add(-90 * 24 * time.Hour)}
	f.writeServers([]data.Server{srvWorking, srv})
	f.results(result(srvWorking, fixNow.Add(-time.Hour), data.Working, ""), result(srv, fixNow.Add(-time.Hour), data.Working, ""))
	f.MustPublish()
	for _, rel := range serverSet(srv.ID)[1:] { // its record lost is a rebuild: TestPublishLostRecord
		t.Run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			g := fixtureIn(t, filepath.Join(t.TempDir(), "fixture"))
			testutil.CopyTree(t, filepath.Dir(f.dir), filepath.Dir(g.dir))
			g.journal = f.journal
			path := filepath.Join(g.out, filepath.FromSlash(rel))
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mustRemove(t, path)
			var logs bytes.Buffer
			cfg := g.config()
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.lookFor = 2 // every server a minute
			g.now = g.now.Add(time.Minute)
			if _, err := Publish(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s not written again as it was: %v\n%s", rel, err, got)
			}
			if !strings.Contains(logs.String(), path) {
				t.Errorf("the log does not name %s:\n%s", path, logs.String())
			}
		})
	}
}
