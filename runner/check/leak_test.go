package check

import (
	"bytes"
	"context"
	"runtime/pprof"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestNoGoroutineLeft proves a check leaves nothing running once it returns
// (the runner makes thousands a day): no SDK reader, no event stream, no
// cancel notification still trying to leave, also after a deadline. It is
// not parallel, so no other test's goroutines are about.
func TestNoGoroutineLeft(t *testing.T) {
	servers := []struct {
		srv     *flowServer
		tg      Target
		timeout time.Duration
	}{}
	add := func(s *flowServer, path, protocol, transport string, timeout time.Duration) {
		servers = append(servers, struct {
			srv     *flowServer
			tg      Target
			timeout time.Duration
		}{s, Target{ID: "leak", URL: s.URL + path, Protocol: protocol, Transport: transport}, timeout})
	}
	add(startFlowServer(t, tsServer(true), serverOpts{}), "/mcp", "", "", 0)
	add(startFlowServer(t, newLegacySSEServer("/sse", "/messages/", answerWith(405, ""), legacyMux("2024-11-05", "a")), serverOpts{legacySSE: true}), "/sse", "", "", 0)
	add(startFlowServer(t, silentSSE(), serverOpts{}), "/mcp", "", "", 200*time.Millisecond)
	for _, s := range servers {
		res, rec := newTestChecker(t, s.srv.Lab, s.timeout).Check(context.Background(), s.tg)
		if res.Status == "" || (s.timeout == 0 && res.Status != data.Working) {
			t.Fatalf("%s: %s %q; transcript:\n%s", s.tg.URL, res.Status, res.Detail, transcriptText(rec))
		}
	}
	var stacks bytes.Buffer
	for deadline := time.Now().Add(5 * time.Second); ; {
		stacks.Reset()
		pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		if !bytes.Contains(stacks.Bytes(), []byte("modelcontextprotocol/go-sdk/mcp.(*streamableClientConn)")) &&
			!bytes.Contains(stacks.Bytes(), []byte("modelcontextprotocol/go-sdk/mcp.(*sseClientConn)")) &&
			!bytes.Contains(stacks.Bytes(), []byte("internal/jsonrpc2.(*Connection)")) &&
			!bytes.Contains(stacks.Bytes(), []byte("runner/check.(*flow)")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of a finished check still run:\n%s", stacks.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
