package planner

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data/lists"
)

// testNow is the time the tests fold, scrub and load states at: when a
// damaged file is set aside, its name and age are of this clock.
var testNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// TestReadServersSummaryLevel: the line counting the servers not checkable
// is a warning when rows are bad, and information when the list only names
// a server without an address, which it may do on purpose (the demo does).
func TestReadServersSummaryLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, rows, want string
	}{
		{"no_address", "b,2,,2026-12-01T00:00:00Z\n", "level=INFO msg=\"ranked list "},
		{"bad_address", "b,2,https://%zz/,2026-12-01T00:00:00Z\n", "level=WARN msg=\"ranked list "},
		{"bad_row", "b,x,https://b.example/mcp,2026-12-01T00:00:00Z\n", "level=WARN msg=\"ranked list "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "servers.csv")
			list := "id,rank,url,added\na,1,https://a.example/mcp,2026-12-01T00:00:00Z\n" + tc.rows
			if err := os.WriteFile(path, []byte(list), 0o644); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
			if _, err := ReadServers(path, lists.ListGuard{}, testNow, logger); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), tc.want) {
				t.Errorf("log %q; want %q", log.String(), tc.want)
			}
		})
	}
}
