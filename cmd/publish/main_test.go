package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/metrics"
)

// contact is the operator's address the tests publish with.
const contact = "stop-checks@example.org"

func TestRun(t *testing.T) {
	dir := t.TempDir()
	dataDir, out := filepath.Join(dir, "data"), filepath.Join(dir, "out")
	list := filepath.Join(dir, "servers.csv")
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	srv := data.Server{ID: "alpha", Rank: 1, URL: "https://alpha.example.com/mcp", Added: at.Add(-time.Hour)}
	var buf bytes.Buffer
	if err := lists.WriteServers(&buf, []data.Server{srv, {ID: "bravo", Rank: 2, URL: "https://bravo.example.com/mcp", Added: at}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(list, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := spool.CreateJournal(dataDir, "run-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(data.Result{ID: srv.ID, URL: srv.URL, Status: data.Working, Started: at.Add(-time.Minute), ToolCount: 1, Tools: []string{"search"}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("P1_publishes_the_files", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		args := []string{"-data", dataDir, "-servers", list, "-out", out, "-contact", contact, "-at", at.Format(time.RFC3339)}
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), "published 2 servers: 2 rendered") {
			t.Errorf("stdout = %q", stdout.String())
		}
		for _, rel := range []string{"index.json", "probe.json", "checks.txt", "checks.html", "index.html",
			"servers/alpha.json", "servers/alpha.html", "badges/alpha.json", "servers/bravo.json"} {
			if _, err := os.Stat(filepath.Join(out, rel)); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		}
		// The operator's contact is on the checks page and in probe.json,
		// where the public text's mangled address was.
		for _, rel := range []string{"checks.txt", "checks.html", "probe.json"} {
			if b, _ := os.ReadFile(filepath.Join(out, rel)); !strings.Contains(string(b), contact) || strings.Contains(string(b), "email protected") {
				t.Errorf("%s does not give the contact %s:\n%s", rel, contact, b)
			}
		}
		var f struct {
			Status string `json:"status"`
			Label  string `json:"label"`
		}
		b, _ := os.ReadFile(filepath.Join(out, "servers", "bravo.json"))
		if err := json.Unmarshal(b, &f); err != nil || f.Status != "pending" || f.Label != "not checked yet" {
			t.Errorf("bravo: %+v, %v", f, err)
		}
	})
	t.Run("P3_second_run_writes_nothing", func(t *testing.T) {
		var stdout bytes.Buffer
		args := []string{"-data", dataDir, "-servers", list, "-out", out, "-contact", contact, "-at", at.Format(time.RFC3339)}
		if err := run(context.Background(), args, &stdout, new(bytes.Buffer)); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout.String(), "0 rendered, 0 files written") {
			t.Errorf("stdout = %q", stdout.String())
		}
	})
	t.Run("metrics_file", func(t *testing.T) {
		file := filepath.Join(dir, "publish.prom")
		args := []string{"-data", dataDir, "-servers", list, "-out", out, "-contact", contact, "-at", at.Format(time.RFC3339), "-metrics", file}
		if err := run(context.Background(), args, new(bytes.Buffer), new(bytes.Buffer)); err != nil {
			t.Fatal(err)
		}
		fams, err := metrics.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]float64{"prober_publish_success": 1, "prober_publish_servers": 2} {
			if mf, ok := fams[name]; !ok || mf.GetMetric()[0].GetGauge().GetValue() != want {
				t.Errorf("%s: %v, want %v", name, mf, want)
			}
		}
	})
	t.Run("O_P1_a_server_whose_files_cannot_be_written_costs_itself_only", func(t *testing.T) {
		// A directory where bravo's file goes, as the ids bravo and
		// bravo.json/x made before ids were checked.
		site, file := filepath.Join(dir, "blocked-site"), filepath.Join(dir, "blocked.prom")
		if err := os.MkdirAll(filepath.Join(site, "servers", "bravo.json", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		args := []string{"-data", dataDir, "-servers", list, "-out", site, "-contact", contact, "-at", at.Format(time.RFC3339), "-metrics", file}
		err := run(context.Background(), args, &stdout, &stderr)
		if code := cli.ExitCode("publish", err, new(bytes.Buffer)); code != 0 {
			t.Fatalf("exit %d (%v), want 0: the other servers are published\n%s", code, err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "1 servers not written") || !strings.Contains(stderr.String(), "id=bravo") {
			t.Errorf("stdout %q, log %q: want bravo counted and named", stdout.String(), stderr.String())
		}
		for _, rel := range []string{"index.json", "status.json", "servers/alpha.json", "badges/alpha.json", "feeds/alpha.atom"} {
			if _, err := os.Stat(filepath.Join(site, rel)); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
		}
		fams, err := metrics.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if mf := fams["prober_publish_servers_unpublished"]; mf == nil || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Errorf("prober_publish_servers_unpublished: %v, want 1", mf)
		}
		if mf := fams["prober_publish_server_unpublished"]; mf == nil || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetLabel()[0].GetValue() != "bravo" {
			t.Errorf("prober_publish_server_unpublished: %v, want bravo", mf)
		}
		if mf := fams["prober_publish_success"]; mf == nil || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Errorf("prober_publish_success: %v, want 1", mf)
		}
		var status struct {
			Unpublished []struct{ ID, Reason string } `json:"unpublished"`
		}
		b, _ := os.ReadFile(filepath.Join(site, "status.json"))
		if err := json.Unmarshal(b, &status); err != nil || len(status.Unpublished) != 1 || status.Unpublished[0].ID != "bravo" {
			t.Errorf("status.json %s (%v): want bravo unpublished", b, err)
		}
	})
	t.Run("O_P1_ids_whose_files_collide_cost_their_rows_only", func(t *testing.T) {
		// a and a.json/b, x.html/y and x: both of each pair passed the id
		// check, and publish failed for the whole directory, every minute
		// ("not a directory", "file exists").
		collidingList, collidingSite := filepath.Join(dir, "colliding.csv"), filepath.Join(dir, "colliding-site")
		var buf bytes.Buffer
		var servers []data.Server
		for i, id := range []string{"a", "a.json/b", "x.html/y", "x"} {
			servers = append(servers, data.Server{ID: id, Rank: i + 1, URL: "https://" + strings.NewReplacer("/", "-", ".", "-").Replace(id) + ".example.com/mcp", Added: at})
		}
		if err := lists.WriteServers(&buf, servers); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(collidingList, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		args := []string{"-data", dataDir, "-servers", collidingList, "-out", collidingSite, "-contact", contact, "-at", at.Format(time.RFC3339)}
		err := run(context.Background(), args, &stdout, &stderr)
		if code := cli.ExitCode("publish", err, new(bytes.Buffer)); code != 0 {
			t.Fatalf("exit %d (%v), want 0\n%s", code, err, stderr.String())
		}
		if !strings.HasPrefix(stdout.String(), "published 2 servers") || !strings.Contains(stdout.String(), "2 bad inputs, 0 servers not written") {
			t.Errorf("stdout %q: want a and x published, the other two rows named bad", stdout.String())
		}
		for _, want := range []string{`id \"a.json/b\" cannot name the site's files`, `id \"x.html/y\" cannot name the site's files`} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("log lacks %s:\n%s", want, stderr.String())
			}
		}
		for _, rel := range []string{"index.json", "servers/a.json", "servers/x.json"} {
			if fi, err := os.Stat(filepath.Join(collidingSite, rel)); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("%s: %v, want a file", rel, err)
			}
		}
	})
	t.Run("data_directory_never_written_is_an_error", func(t *testing.T) {
		typo, site := filepath.Join(dir, "dta-typo"), filepath.Join(dir, "typo-site")
		for _, d := range []string{typo, filepath.Join(dir, "empty")} {
			if d != typo {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"-data", d, "-servers", list, "-out", site, "-contact", contact, "-at", at.Format(time.RFC3339)}
			err := run(context.Background(), args, new(bytes.Buffer), new(bytes.Buffer))
			if err == nil || !strings.Contains(err.Error(), "data directory "+d+": not written by plan or run") {
				t.Errorf("-data %s: err %v, want a refusal naming it", d, err)
			}
		}
		for _, p := range []string{typo, site} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%s exists after the refusal: %v", p, err)
			}
		}
	})
	t.Run("contact_is_required", func(t *testing.T) {
		// In production as anywhere: a checks page without the operator's
		// address would promise a way to stop the checks that is not there.
		for _, c := range []struct{ contact, want string }{
			{"", "-contact: none given"},
			{"Probe <probe@example.org>", `-contact: "Probe <probe@example.org>" is not a bare e-mail address`},
			{"probe", `-contact: "probe" is not a bare e-mail address`},
		} {
			site := filepath.Join(dir, "no-contact-site")
			args := []string{"-data", dataDir, "-servers", list, "-out", site, "-at", at.Format(time.RFC3339)}
			if c.contact != "" {
				args = append(args, "-contact", c.contact)
			}
			err := run(context.Background(), args, new(bytes.Buffer), new(bytes.Buffer))
			if code := cli.ExitCode("publish", err, new(bytes.Buffer)); code != cli.ExitUsage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("-contact %q: exit %d, err %v; want %d naming -contact (%q)", c.contact, code, err, cli.ExitUsage, c.want)
			}
			if _, err := os.Stat(site); !os.IsNotExist(err) {
				t.Errorf("-contact %q: %s exists after the refusal: %v", c.contact, site, err)
			}
		}
	})
	t.Run("bad_flags", func(t *testing.T) {
		for _, args := range [][]string{
			{"-servers", list, "-out", out},
			{"-data", dataDir, "-out", out},
			{"-data", dataDir, "-servers", list},
			{"-data", dataDir, "-servers", list, "-out", out, "-at", "yesterday"},
			{"-data", dataDir, "-servers", list, "-out", out, "extra"},
		} {
			if err := run(context.Background(), args, new(bytes.Buffer), new(bytes.Buffer)); err == nil {
				t.Errorf("run %q: no error", args)
			}
		}
	})
}
