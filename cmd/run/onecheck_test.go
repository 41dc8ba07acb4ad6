package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site"
	"plug.directory/prober/site/record"
)

// oneCheck is a data directory as plan leaves it for one check of one
// server in the current minute, and the ranked list of that server.
type oneCheck struct {
	srv          data.Server
	dir, servers string
	minute       time.Time
}

// planOneCheck lists the server id at url (host mcp.test) and plans its
// first check at the start of this minute.
func planOneCheck(t *testing.T, id, url string) oneCheck {
	t.Helper()
	c := oneCheck{dir: t.TempDir(), servers: filepath.Join(t.TempDir(), "servers.csv"), minute: time.Now().UTC().Truncate(time.Minute)}
	c.srv = data.Server{ID: id, Rank: 1, URL: url, Added: c.minute.Add(-time.Hour)}
	var list bytes.Buffer
	if err := lists.WriteServers(&list, []data.Server{c.srv}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.servers, list.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := spool.WritePlan(c.dir, c.minute, []data.PlannedCheck{{At: c.minute, Due: c.minute, ID: id, URL: url, Host: "mcp.test", Reason: data.ReasonNew, Rank: 1}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs the planned minute with the flags given and returns the one
// result the history then holds.
func (c oneCheck) run(t *testing.T, flags ...string) data.Result {
	t.Helper()
	if code, stdout, stderr := runArgs(t, append(flags, "-data", c.dir, "-at", c.minute.Format("2006-01-02T15:04"))...); code != 0 {
		t.Fatalf("run: exit %d, %s %s", code, stdout, stderr)
	}
	rs, bad, err := history.ReadHistory(c.dir, c.minute, c.minute)
	if err != nil || len(bad) > 0 || len(rs) != 1 {
		t.Fatalf("history: %v %v %d results", err, bad, len(rs))
	}
	return rs[0]
}

// publish publishes the data directory as of now and returns the server's
// published file and the directory published to.
func (c oneCheck) publish(t *testing.T, now time.Time) (record.ServerFile, string) {
	t.Helper()
	out := t.TempDir()
	if _, err := site.Publish(context.Background(), site.Config{Contact: "probe@example.org", DataDir: c.dir, ServersPath: c.servers, OutDir: out,
		Now: func() time.Time { return now }, NoHTML: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "servers", c.srv.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f record.ServerFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f, out
}
