package check

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
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
		if _, err := io.WriteString(w, EscapeControl(transcriptLine(ex, t0))+"\n"); err != nil {
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

// EscapeControl returns s fit for a terminal: every control character (C0
// and C1, DEL, so no escape sequence a server put into its name reaches the
// terminal), every bidirectional override (which can make text read in
// another order than it is) and every byte that is not UTF-8 written as a
// Go escape ("\x1b", "\u202e"). Other text is kept as it is.
func EscapeControl(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x100 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r must not reach a terminal as it is.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// SSEEvent is one server-sent event of an answer, as the transcript shows it.
type SSEEvent struct {
	Event string // event type; "" means "message"
	Data  string // its data lines joined by "\n", cut to maxEventData bytes
}

// maxEventData and maxEvents bound what Events returns of an answer.
const (
	maxEventData = 256
	maxEvents    = 20
)

// Events returns the complete server-sent events in what the record kept of
// an event-stream answer (its first 4 KiB, BodyHead), at most maxEvents:
// the legacy stream's endpoint event, the messages that answered a POST.
// It returns nil for any other answer.
func (ex Exchange) Events() []SSEEvent {
	if mediaType(ex) != "text/event-stream" {
		return nil
	}
	text := strings.ReplaceAll(strings.ReplaceAll(string(ex.BodyHead), "\r\n", "\n"), "\r", "\n")
	blocks := strings.Split(text, "\n\n")
	var out []SSEEvent
	for _, block := range blocks[:len(blocks)-1] { // the last block is not complete
		var ev SSEEvent
		var data []string
		seen := false
		for _, line := range strings.Split(block, "\n") {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				ev.Event, seen = value, true
			case "data":
				data, seen = append(data, value), true
			}
		}
		if !seen {
			continue
		}
		ev.Data = strings.Join(data, "\n")
		if len(ev.Data) > maxEventData {
			ev.Data = strings.ToValidUTF8(ev.Data[:maxEventData], "") + "…"
		}
		out = append(out, ev)
		if len(out) == maxEvents {
			break
		}
	}
	return out
}
