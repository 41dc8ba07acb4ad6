package check

import (
	"context"
	"testing"

	"plug.directory/prober/data"
)

// TestSSEProtocolAnswered (rule N4): over
// the legacy HTTP+SSE transport the result records the protocol version the
// server answered, not the 2024-11-05 the check asked for.
func TestSSEProtocolAnswered(t *testing.T) {
	t.Parallel()
	srv := startFlowServer(t, newLegacySSEServer("/sse", "/messages", answerWith(405, ""), legacyMux("2025-03-26", "a")), serverOpts{legacySSE: true})
	tg := Target{ID: "srv", URL: srv.URL + "/sse", Protocol: protocolSSE, Transport: data.TransportSSE}
	res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), tg)
	if res.Status != data.Working {
		t.Fatalf("status %s (%s); transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
	}
	if res.Protocol != "2025-03-26" || res.Transport != data.TransportSSE {
		t.Errorf("recorded %q over %q; want the answered 2025-03-26 over sse", res.Protocol, res.Transport)
	}
}
