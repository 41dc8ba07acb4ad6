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
	add(startFlowServer(t, silentSSE(), serverOpts{}), "/mcp", "", "", realWait(200*time.Millisecond, 100*time.Millisecond))
	for _, s := range servers {
		res, rec := newTestChecker(t, s.srv.Lab, s.timeout).Check(context.Background(), s.tg)
		if res.Status == "" || (s.timeout == 0 && res.Status != data.Working) {
			t.Fatalf("%s: %s %q; transcript:\n%s", s.tg.URL, res.Status, res.Detail, transcriptText(rec))
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		left := clientGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of a finished check still run:\n%s", bytes.Join(left, []byte("\n\n")))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clientGoroutines returns the stacks of goroutines that belong to a check's
// client side. The test servers of other tests run go-sdk sessions too (the
// guard never sends the DELETE that would end them), so a goroutine counts
// only when its stack shows the client.
func clientGoroutines() [][]byte {
	var all bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&all, 2)
	var left [][]byte
	for _, g := range bytes.Split(all.Bytes(), []byte("\n\n")) {
		for _, mark := range []string{
			"modelcontextprotocol/go-sdk/mcp.(*streamableClientConn)",
			"modelcontextprotocol/go-sdk/mcp.(*sseClientConn)",
			"modelcontextprotocol/go-sdk/mcp.(*ClientSession)",
			"runner/check.(*flow)",
			"runner/check.(*Guard)",
		} {
			if bytes.Contains(g, []byte(mark)) {
				left = append(left, g)
				break
			}
		}
	}
	return left
}
