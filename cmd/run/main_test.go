package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.ShortInMemory() // each run writes and fsyncs a journal, a fold, a site
	os.Exit(m.Run())
}

// labServer is a local MCP-speaking TLS server on a random 127.x.y.z:8443,
// reachable in the lab setting as https://mcp.test:8443/mcp.
type labServer struct {
	url     string
	resolve string // -resolve value
	caFile  string
	addr    netip.Addr // the loopback address it listens on, port 8443
}

// startServer serves h over TLS with a fresh CA whose certificate it writes
// to a file, for -ca-file. The certificate names mcp.test and the hosts in
// also, which a test sends to addr with -resolve of its own.
func startServer(t *testing.T, h http.Handler, also ...string) labServer {
	t.Helper()
	ca := testutil.MustCA(t)
	cert := ca.MustLeaf(t, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), append([]string{"mcp.test"}, also...)...)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = testutil.ListenLoopback8443(t)
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	addr := netip.MustParseAddrPort(srv.Listener.Addr().String()).Addr()
	return labServer{url: "https://mcp.test:8443/mcp", resolve: "mcp.test:8443:" + addr.String(), caFile: ca.File, addr: addr}
}

// mcpServer answers as a 2025-06-18 MCP server that names itself
// serverInfo and lists tools (both JSON), or with failStatus to everything
// when it is not 0, counting the requests it received in seen when set.
type mcpServer struct {
	failStatus        int
	serverInfo, tools string
	seen              *atomic.Int32
}

// mcpHandler answers as a pre-2026 MCP server with one tool, or with
// failStatus to everything when it is not 0.
func mcpHandler(failStatus int) mcpServer {
	return mcpServer{failStatus: failStatus, serverInfo: `{"name":"demo","version":"1.0"}`,
		tools: `[{"name":"echo","inputSchema":{"type":"object"}}]`}
}

func (s mcpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.seen != nil {
		s.seen.Add(1)
	}
	if s.failStatus != 0 {
		http.Error(w, http.StatusText(s.failStatus), s.failStatus)
		return
	}
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
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":%s}}`, m.ID, s.serverInfo)
	case "tools/list":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}`, m.ID, s.tools)
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
	}
}

// runArgs runs the command and returns its exit status and output.
func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	code := cli.ExitCode("run", err, &stderr)
	return code, stdout.String(), stderr.String()
}

// squeeze collapses runs of spaces, so assertions do not depend on column
// widths.
func squeeze(s string) string {
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}

func TestOneOff(t *testing.T) {
	t.Parallel()
	ok := startServer(t, mcpHandler(0))
	broken := startServer(t, mcpHandler(http.StatusBadGateway))
	lab := func(s labServer, extra ...string) []string {
		return append([]string{"-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-url", s.url}, extra...)
	}

	t.Run("text_answered_exit_0", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := runArgs(t, lab(ok)...)
		if code != 0 {
			t.Fatalf("exit %d, want 0; stderr %s; stdout:\n%s", code, errOut, out)
		}
		for _, want := range []string{"outcome working", "label working", "reason 1 tool", "protocol 2025-06-18 over streamable-http",
			"tools 1: echo", "took ", "4 requests, 1 connection,", "transcript:",
			"POST https://mcp.test:8443/mcp server/discover -> 200", "initialize -> 200", "notifications/initialized -> 202", "tools/list -> 200"} {
			if !strings.Contains(squeeze(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("json_answered_exit_0", func(t *testing.T) {
		t.Parallel()
		code, out, errOut := runArgs(t, lab(ok, "-json")...)
		if code != 0 {
			t.Fatalf("exit %d, want 0; stderr %s", code, errOut)
		}
		var got struct {
			Status, Label, Reason, Protocol, Transport string
			Tools                                      []string
			Requests, Conns                            int
			Transcript                                 []struct {
				Method    string `json:"method"`
				RPCMethod string `json:"rpc_method"`
				Status    int    `json:"status"`
			}
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("output is not one JSON object: %v\n%s", err, out)
		}
		if got.Status != "working" || got.Label != "working" || got.Reason != "1 tool" || got.Protocol != "2025-06-18" ||
			got.Transport != "streamable-http" || !slices.Equal(got.Tools, []string{"echo"}) || got.Requests != 4 || got.Conns != 1 {
			t.Errorf("got %+v", got)
		}
		var rpc []string
		for _, ex := range got.Transcript {
			rpc = append(rpc, ex.Method+" "+ex.RPCMethod)
		}
		if want := []string{"POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list"}; !slices.Equal(rpc, want) {
			t.Errorf("transcript %q, want %q", rpc, want)
		}
	})
	t.Run("not_answered_exit_1", func(t *testing.T) {
		t.Parallel()
		code, out, _ := runArgs(t, lab(broken, "-json")...)
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		var got struct{ Status, Label, Reason string }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if got.Status != "failing" || got.Label != "failing" || got.Reason != "HTTP 502" {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("not_checkable_without_lab_exit_1", func(t *testing.T) {
		t.Parallel()
		// Without -lab a check never goes to a loopback address (rule N6).
		code, out, _ := runArgs(t, "-url", "https://127.0.0.1:8443/mcp")
		if code != 1 || !strings.Contains(squeeze(out), "outcome not_checkable") {
			t.Errorf("exit %d, output:\n%s", code, out)
		}
	})
}

func TestOneOffUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-url", "https://mcp.test/mcp", "-nope"},
		{"-url", "https://mcp.test/mcp", "extra"},
		{"-url", ""},
		{"-url", "https://mcp.test/mcp", "-source", "not-an-address"},
		{"-url", "https://mcp.test/mcp", "-resolve", "mcp.test:443:127.0.0.9"}, // -resolve needs -lab
		{"-url", "https://mcp.test/mcp", "-lab", "-resolve", "mcp.test:443:10.0.0.1"},
		{"-url", "https://mcp.test/mcp", "-lab", "-ca-file", "/does/not/exist.pem"},
		{"-url", "https://mcp.test/mcp", "-transport", "carrier-pigeon"},
		{"-url", "https://mcp.test/mcp", "-timeout", "46s"},
		{"-url", "https://mcp.test/mcp", "-timeout", "0s"},
	} {
		if code, out, errOut := runArgs(t, args...); code != 2 || out != "" {
			t.Errorf("%q: exit %d (stderr %q, stdout %q), want 2 and no result", args, code, errOut, out)
		}
	}
}

// TestModes: each mode has its own flags and usage, and
// every command line in use picks the mode it always did, its flags all
// parsed there: those of the demo, deploy/minute.sh, the docs, the
// Makefile and the tests, and the modes' names. "-h" at the end prints the
// usage of the mode picked, after every flag before it was taken.
func TestModes(t *testing.T) {
	t.Parallel()
	const (
		check  = "usage: run -url https://host/mcp"
		minute = "usage: run [minute] -data DIR"
		loop   = "usage: run loop -data DIR -servers FILE"
	)
	lab := []string{"-lab", "-resolve", "docs.demo.test:8443:127.0.0.2", "-ca-file", "ca.pem"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", "https://host/mcp"}, check},                                          // make check, the docs
		{append(append([]string{}, lab...), "-url", "https://docs.demo.test:8443/mcp"), check}, // the demo's one-off lines
		{[]string{"-url", "https://host/mcp", "-json", "-source", "192.0.2.1", "-protocol", "2025-11-25", "-transport", "sse", "-timeout", "10s"}, check},
		{[]string{"check", "https://host/mcp", "-json"}, check},
		{[]string{"check", "-url", "https://host/mcp"}, check},
		{[]string{"-data", "var/data"}, minute},                                                                                  // the docs
		{[]string{"-data", "var/data", "-at", "2026-12-02T10:33"}, minute},                                                       // the docs
		{append([]string{"-data", "d", "-at", "2026-12-02T10:33", "-timeout", "10s", "-grace", "1s"}, lab...), minute},           // the demo
		{[]string{"-data", "var/data", "-at", "2026-12-02T10:33", "-source", "87.236.197.37", "-metrics", "m/run.prom"}, minute}, // minute.sh
		{[]string{"-data", "d", "-concurrency", "10", "-v"}, minute},
		{[]string{"minute", "-data", "d"}, minute},
		{[]string{"-loop", "-data", "var/data", "-servers", "var/servers.csv", "-paused", "var/paused.txt", "-out", "var/site", "-contact", "probe@plug.directory", "-source", "87.236.197.37"}, loop}, // the docs
		{[]string{"-loop", "-first-check-soon", "-data", "d", "-servers", "s", "-out", "o", "-metrics", "r.prom", "-publish-metrics", "p.prom", "-grace", "8s"}, loop},
		{[]string{"-data", "d", "-servers", "s", "-out", "o", "-loop"}, loop},
		{[]string{"loop", "-data", "d", "-servers", "s", "-out", "o"}, loop},
	} {
		code, stdout, stderr := runArgs(t, append(c.args, "-h")...)
		if code != 0 || !strings.HasPrefix(stdout, c.want) || stderr != "" {
			t.Errorf("%q -h: exit %d, stdout %.80q, stderr %q; want 0 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// TestHelp: run -h and run -url -h print their usage on stdout and exit 0;
// "-h" after -url is never taken for a server's address.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-h"}, "see run check -h"},
		{[]string{"-url", "-h"}, "usage: run -url https://host/mcp"},
		{[]string{"-url", "--help"}, "usage: run -url https://host/mcp"},
		{[]string{"-url", "https://mcp.test/mcp", "-h"}, "usage: run -url https://host/mcp"},
	} {
		code, stdout, stderr := runArgs(t, c.args...)
		if code != 0 || !strings.Contains(stdout, c.want) || stderr != "" || strings.Contains(stdout, "outcome") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and the usage, no check", c.args, code, stdout, stderr)
		}
	}
	if code, stdout, stderr := runArgs(t, "-url", "-json"); code != 2 || stdout != "" || !strings.Contains(stderr, "want the server's address") {
		t.Errorf("-url -json: exit %d, stdout %q, stderr %q; want a usage error", code, stdout, stderr)
	}
}

// TestSourceNotOurs: `run -source` with an address this machine does not
// own stops at start, exit 1, saying so once in plain words (rule N11),
// before any plan is read or any check recorded.
// Binding a local address sends no packet.
func TestSourceNotOurs(t *testing.T) {
	t.Parallel()
	code, _, errOut := runArgs(t, "-source", "192.0.2.1", "-data", t.TempDir(), "-at", "2100-01-01T00:00")
	if code != 1 || !strings.Contains(errOut, "bind source address 192.0.2.1") || strings.Count(errOut, "new checker") > 1 {
		t.Errorf("exit %d, stderr %q; want 1 and the bind failure named once", code, errOut)
	}
}
