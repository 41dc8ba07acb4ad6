package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// hostileNames answers as a 2025-06-18 MCP server whose name, version and
// tool names carry terminal escape sequences, counting the requests it
// received.
func hostileNames(seen *atomic.Int32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},`+
				`"serverInfo":{"name":"evil\u001b]0;owned\u0007","version":"1\u001b[2J\u009b31m"}}}`, m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"rm\u001b[1A\r-rf","inputSchema":{"type":"object"}},`+
				`{"name":"txt\u202egnp.exe","inputSchema":{"type":"object"}}]}}`, m.ID)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
		}
	}
}

// TestOneOffText_escapes_control_characters proves that run -url's text
// shows a server's name, version and tool names with their control
// characters escaped: nothing a server says reaches the owner's terminal as
// an escape sequence. The JSON keeps them as received (JSON escapes them).
func TestOneOffText_escapes_control_characters(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	s := startServer(t, hostileNames(&seen))
	code, out, errOut := runArgs(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", s.url)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr %s; stdout:\n%s", code, errOut, out)
	}
	if got := seen.Load(); got != 4 {
		t.Errorf("server received %d requests, want 4 (discover, initialize, initialized, tools/list)", got)
	}
	for _, r := range out {
		if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e) {
			t.Fatalf("output carries control character %U:\n%q", r, out)
		}
	}
	for _, want := range []string{`evil\x1b]0;owned\x07`, `1\x1b[2J\x9b31m`, `rm\x1b[1A\x0d-rf`, `txt\u202egnp.exe`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}
