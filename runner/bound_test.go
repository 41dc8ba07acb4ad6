package runner

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// TestHostileAnswersBounded runs a minute of four real go-sdk servers on
// loopback, through Run and its fold, as cron does: one names itself with
// 1,000,000 '<' (6 MB once JSON-escaped), one lists ~9 MB of tool names
// over ten pages, two are ordinary. Before results were bounded, the
// journal line of either hostile server was longer than the reader took
// and the fold lost the whole minute (0 of 3 results). Now every result is
// recorded, the hostile ones bounded with the exact tool count.
func TestHostileAnswersBounded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers and moves ~10 MB: full mode only, make test runs it")
	}
	farm := MustLabFarm(t, 4)
	quietSDK := slog.New(slog.DiscardHandler)
	name := mcp.NewServer(&mcp.Implementation{Name: strings.Repeat("<", 1_000_000), Version: "1.0.0"}, &mcp.ServerOptions{Logger: quietSDK})
	mcp.AddTool(name, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	farm.Serve(0, name)
	const pageSize, pages, nameLen = 900, 10, 1000 // a page of ~940 KB, under the 1 MB an answer may take
	tools := mcp.NewServer(&mcp.Implementation{Name: "many-tools", Version: "1.0.0"}, &mcp.ServerOptions{Logger: quietSDK, PageSize: pageSize})
	for i := range pageSize * pages {
		tools.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%05d_%s", i, strings.Repeat("x", nameLen-7)), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	farm.Serve(1, tools)

	dir := t.TempDir()
	m := minute0
	var checks []data.PlannedCheck
	for i, id := range []string{"hostile-name", "hostile-tools", "good-1", "good-2"} {
		checks = append(checks, data.PlannedCheck{At: m.Add(time.Duration(i) * time.Second), Due: m, ID: id, URL: farm.URL(i, id),
			Host: farm.Hosts[i], Reason: data.ReasonRoutine, Rank: 1 + i})
	}
	MustPlan(t, dir, m, checks...)
	clock := newScaledClock(m.Add(-time.Second), 10)
	cfg := checkConfig(farm, clock)
	cfg.Timeout = data.CheckTimeout // ten 1 MB pages under -race on a loaded machine take a while
	checker, err := NewChecker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), Config{Dir: dir, Checker: checker, Clock: clock, Logger: slog.New(slog.DiscardHandler)}, m)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != 4 || sum.Fold.Results != 4 || len(sum.Fold.Bad) != 0 {
		t.Fatalf("run: %d completed, %d folded, bad %v; want 4, 4, none", sum.Completed, sum.Fold.Results, sum.Fold.Bad)
	}
	rs := MustJournaled(t, dir)
	got := map[string]data.Result{}
	for _, r := range rs {
		got[r.ID] = r
	}
	for _, id := range []string{"good-1", "good-2"} {
		if r := got[id]; r.Status != data.Working || r.ServerName != "lab-server" || r.ToolCount != 1 {
			t.Errorf("%s: %s %q (server %q, %d tools), want working lab-server with 1 tool", id, r.Status, r.Detail, r.ServerName, r.ToolCount)
		}
	}
	h := got["hostile-name"]
	if h.Status != data.Working || !strings.HasSuffix(h.ServerName, data.TruncatedMarker) || len(h.ServerName) > data.MaxNameBytes {
		t.Errorf("hostile-name: %s %q, name of %d bytes %.20q; want working, the name cut with the marker", h.Status, h.Detail, len(h.ServerName), h.ServerName)
	}
	tl := got["hostile-tools"]
	if tl.Status != data.Working || tl.ToolCount != pageSize*pages || len(tl.Tools) == 0 || len(tl.Tools) > data.MaxToolNames ||
		!strings.HasPrefix(tl.Tools[0], "t00000_") || !strings.HasSuffix(tl.Tools[0], data.TruncatedMarker) {
		t.Errorf("hostile-tools: %s %q, %d tools, %d names kept; want working, %d tools, names cut", tl.Status, tl.Detail, tl.ToolCount, len(tl.Tools), pageSize*pages)
	}
	if hits := farm.Hits(farm.Hosts[1]); hits < 1+pages {
		t.Errorf("the many-tools server saw %d requests, want its %d pages asked", hits, pages)
	}
	t.Logf("hostile-tools: %d tools, %d names kept; bytes read %d", tl.ToolCount, len(tl.Tools), tl.BytesRead)
}
