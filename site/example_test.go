package site_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site"
	"plug.directory/prober/site/record"
)

// ExamplePublish publishes a ranked list of one server checked once, as
// cmd/publish and cmd/run -loop do.
func ExamplePublish() {
	dir, _ := os.MkdirTemp("", "site-example")
	defer os.RemoveAll(dir)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	srv := data.Server{ID: "alpha", Rank: 1, URL: "https://alpha.example.com/mcp", Added: now.Add(-time.Hour)}
	var list bytes.Buffer
	_ = lists.WriteServers(&list, []data.Server{srv})
	_ = os.WriteFile(filepath.Join(dir, "servers.csv"), list.Bytes(), 0o644)
	j, _ := spool.CreateJournal(filepath.Join(dir, "data"), "run-example")
	_ = j.Append(data.Result{ID: srv.ID, URL: srv.URL, Status: data.NeedsKey, Detail: "HTTP 401", Started: now.Add(-time.Minute)})
	_ = j.Close()

	st, err := site.Publish(context.Background(), site.Config{
		DataDir:     filepath.Join(dir, "data"),
		ServersPath: filepath.Join(dir, "servers.csv"),
		OutDir:      filepath.Join(dir, "out"),
		Now:         func() time.Time { return now },
		Contact:     "probe@example.org",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out", "servers", "alpha.json"))
	var f record.ServerFile
	_ = json.Unmarshal(b, &f)
	fmt.Println(st.Servers, "server,", st.Results, "result")
	fmt.Printf("%s: %s (%s), uptime 24 h %.0f %%\n", f.ID, f.Status, f.Label, *f.Uptime.Day.Percent)
	// Output:
	// 1 server, 1 result
	// alpha: needs_key (needs a key), uptime 24 h 100 %
}
