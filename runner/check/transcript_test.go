package check

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/internal/testutil"
)

// TestWriteTranscript compares the transcript of a fixed record (a fallback
// to legacy SSE, a refused answer and DELETE, a failure, a cut read) with
// testdata/transcript.golden; -update rewrites it.
func TestWriteTranscript(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const u = "https://mcp.test:8443/sse"
	rec := Record{Exchanges: []Exchange{
		{Start: at(0), Duration: 12 * time.Millisecond, Method: "POST", URL: u, RPCMethod: "server/discover", Status: 405, Header: http.Header{}, Bytes: 18},
		{Start: at(13), Duration: 2 * time.Millisecond, Method: "POST", URL: u, RPCMethod: "initialize", Status: 405, Bytes: 18},
		{Start: at(16), Duration: 40 * time.Millisecond, Method: "GET", URL: u, Status: 200, Bytes: 512, ErrKind: ErrCanceled, Detail: "canceled"},
		{Start: at(20), Duration: 3 * time.Millisecond, Method: "POST", URL: u + "/messages/?session_id=1", RPCMethod: "initialize", Status: 202, Bytes: 8},
		{Start: at(24), Method: "POST", URL: u + "/messages/?session_id=1", RPCMethod: "response", Blocked: "N3: response to a server request", ErrKind: ErrBlocked},
		{Start: at(25), Duration: 1500 * time.Millisecond, Method: "POST", URL: u + "/messages/?session_id=1", RPCMethod: "tools/list", ErrKind: ErrTLSCert, Detail: "certificate has expired"},
		{Start: at(1526), Method: "DELETE", URL: u, Blocked: "N2: method DELETE", ErrKind: ErrBlocked},
	}}
	got := transcriptText(rec)
	testutil.Golden(t, "testdata/transcript.golden", []byte(got))
}

// transcriptText is WriteTranscript into a string, for test failures.
func transcriptText(rec Record) string {
	var b strings.Builder
	_ = WriteTranscript(&b, rec)
	return b.String()
}

// TestEscapeControl pins the escaping of transcripts and run -url's text.
func TestEscapeControl(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":       "plain name",
		"büch€r ✓":         "büch€r ✓",
		"a\x1b[31mb":       `a\x1b[31mb`,
		"tab\there\nline":  `tab\x09here\x0aline`,
		"del\x7f c1\u0085": `del\x7f c1\x85`,
		"bad\xffutf8":      `bad\xffutf8`,
		"rtl\u202eabc":     `rtl\u202eabc`,
		"back\\slash":      `back\slash`,
	} {
		if got := EscapeControl(in); got != want {
			t.Errorf("EscapeControl(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestEvents pins what the transcript shows of an event stream: complete
// events only, CRLF or LF, data lines joined, long data cut.
func TestEvents(t *testing.T) {
	long := strings.Repeat("é", 200)
	ex := Exchange{Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
		BodyHead: []byte("event: endpoint\r\ndata: /messages?s=1\r\n\r\n: comment\n\ndata: a\ndata: b\n\ndata: " + long + "\n\nevent: message\ndata: cut")}
	got := ex.Events()
	want := []SSEEvent{{"endpoint", "/messages?s=1"}, {"", "a\nb"}, {"", strings.Repeat("é", 128) + "…"}}
	if !slices.Equal(got, want) {
		t.Errorf("Events() = %q, want %q", got, want)
	}
	if ev := (Exchange{Header: http.Header{"Content-Type": {"application/json"}}, BodyHead: []byte("data: x\n\n")}).Events(); ev != nil {
		t.Errorf("events of a JSON answer: %q", ev)
	}
}
