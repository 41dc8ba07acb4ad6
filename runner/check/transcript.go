package check

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteTranscript writes one line per exchange of rec: time since the first
// request, HTTP method, URL, JSON-RPC method, status, bytes read and
// duration, or why the guard refused to send it, or how it failed. It
// returns the first write error.
func WriteTranscript(w io.Writer, rec Record) error {
	var t0 time.Time
	if len(rec.Exchanges) > 0 {
		t0 = rec.Exchanges[0].Start
	}
	for _, ex := range rec.Exchanges {
		if _, err := io.WriteString(w, transcriptLine(ex, t0)+"\n"); err != nil {
			return fmt.Errorf("write transcript: %w", err)
		}
	}
	return nil
}

// transcriptLine formats one exchange.
func transcriptLine(ex Exchange, t0 time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%+8.3fs  %-4s %s", ex.Start.Sub(t0).Seconds(), ex.Method, ex.URL)
	if ex.RPCMethod != "" {
		b.WriteString("  " + ex.RPCMethod)
	}
	switch {
	case ex.Blocked != "":
		b.WriteString("  NOT SENT (" + ex.Blocked + ")")
	case ex.Status != 0:
		fmt.Fprintf(&b, "  -> %d  %d B  %s", ex.Status, ex.Bytes, ex.Duration.Round(time.Millisecond))
	}
	if ex.ErrKind == ErrCanceled && ex.Blocked == "" {
		b.WriteString("  (reading stopped: the check ended)")
		return b.String()
	}
	if ex.ErrKind != ErrNone && ex.Blocked == "" {
		why := ex.Detail
		if why == "" {
			why = ex.Err
		}
		fmt.Fprintf(&b, "  failed: %s (%s)", why, ex.ErrKind)
	}
	return b.String()
}
