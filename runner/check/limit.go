package check

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"plug.directory/prober/data"
)

// headSize is how much of each answer body the record keeps (BodyHead), for
// HTML, bot-challenge and error-body detection.
const headSize = 4 << 10

// errTooLarge is returned by an answer body at its data.MaxAnswerBytes+1st
// byte (rule N9).
var errTooLarge = &GuardError{Kind: ErrTooLarge, Rule: "N9", Detail: "answer over 1 MB"}

// answerBody wraps one answer body (rule N9): it counts bytes after
// decompression (the transport decompresses gzip before this reader), lets
// exactly data.MaxAnswerBytes through and fails at the next byte, closing the
// connection's stream. An SSE stream is one answer. It keeps the first
// headSize bytes in the exchange and ends the exchange's duration when the
// body is closed or fails.
type answerBody struct {
	g   *Guard
	ex  *Exchange
	req *http.Request // whose context may end the answer
	rc  io.ReadCloser

	// Read is called by one goroutine; Close may come from another (the SDK
	// closes a stream to stop it) and must not wait for a blocked Read.
	n       int64       // bytes read, after decompression
	pending []byte      // bytes read ahead for BodyHead, not yet handed out
	err     error       // sticky error: io.EOF, errTooLarge or a transport error
	closing atomic.Bool // Close was called: a read error is then no failure
	done    bool        // exchange ended; guarded by g.mu
	counted bool        // an HTTP/1.1 answer to a POST, counted in g.open
	// A POST's event stream: watch finds the answer to its request; once
	// it was read (answered) the stream ends there, and what followed it
	// in the same read was dropped (cut).
	watch    *answerWatch
	answered bool
	cut      bool
	nesting  jsonNesting // of the bytes read, for Exchange.Nesting
}

// newAnswerBody wraps resp.Body. Answers that are not event streams get
// their first headSize bytes read at once, so the record holds the start of
// an error or HTML page even if the SDK never reads it.
func newAnswerBody(g *Guard, ex *Exchange, resp *http.Response) *answerBody {
	b := &answerBody{g: g, ex: ex, req: resp.Request, rc: resp.Body}
	if resp.ProtoMajor == 1 && resp.Request != nil && resp.Request.Method == http.MethodPost {
		b.counted = true
		g.mu.Lock()
		g.answerOpened()
		g.mu.Unlock()
	}
	stream := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	if stream && resp.Request != nil && resp.Request.Method == http.MethodPost && ex.RPCID != "" {
		b.watch = &answerWatch{id: ex.RPCID}
	}
	if !stream {
		size := int64(headSize)
		if resp.ContentLength >= 0 && resp.ContentLength < size {
			size = resp.ContentLength + 1 // +1 sees EOF (or a body longer than announced) in one go
		}
		buf := make([]byte, size)
		n := 0
		for n < len(buf) && b.err == nil {
			k, err := b.readRaw(buf[n:])
			n += k
			if err != nil {
				b.err = err
			}
		}
		b.pending = buf[:n]
	}
	return b
}

// Read hands out read-ahead bytes first, then reads through the cap.
func (b *answerBody) Read(p []byte) (int, error) {
	if len(b.pending) > 0 {
		k := copy(p, b.pending)
		b.pending = b.pending[k:]
		return k, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.answered {
		b.err = b.afterAnswer()
		return 0, b.err
	}
	k, err := b.readRaw(p)
	if err != nil {
		b.err = err
	}
	return k, err
}

// readRaw reads from the underlying body through the cap, counting and
// keeping the head.
func (b *answerBody) readRaw(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.n >= data.MaxAnswerBytes {
		// Exactly the cap is allowed: only a further byte is too much.
		var one [1]byte
		k, err := b.rc.Read(one[:])
		if k > 0 {
			b.fail(errTooLarge)
			return 0, errTooLarge
		}
		if err == nil {
			return 0, nil
		}
		if err == io.EOF {
			err = b.interrupted()
		}
		b.fail(err)
		return 0, err
	}
	if rest := data.MaxAnswerBytes - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := b.rc.Read(p)
	if b.watch != nil && !b.answered {
		if end := b.watch.feed(p[:k]); end >= 0 {
			b.answered, b.cut = true, end < k
			k = end
		}
	}
	if err == io.EOF {
		err = b.interrupted()
	}
	b.n += int64(k)
	b.nesting.feed(p[:k])
	b.g.mu.Lock()
	b.ex.Bytes = b.n
	b.ex.Nesting = b.nesting.max
	if room := headSize - len(b.ex.BodyHead); room > 0 && k > 0 {
		b.ex.BodyHead = append(b.ex.BodyHead, p[:min(k, room)]...)
	}
	b.g.mu.Unlock()
	if err != nil {
		b.fail(err)
	}
	return k, err
}

// afterAnswer ends a POST's event stream once the answer to its request
// was read: at the stream's own end if that comes next (the connection is
// then reused), else the guard stops reading and closes it, however much
// the server would still send. The answer is complete either way.
func (b *answerBody) afterAnswer() error {
	if !b.cut {
		var one [1]byte
		k, err := 0, error(nil)
		for k == 0 && err == nil {
			k, err = b.rc.Read(one[:])
		}
		b.cut = k > 0 || err != io.EOF
	}
	if b.cut {
		b.rc.Close()
	}
	b.finish(nil)
	return io.EOF
}

// interrupted decides what an end of the answer means. When the request's
// context has ended or the guard was closed, net/http may report a cut
// stream as a clean io.EOF; the answer was cut, not complete, so the
// context's error (or the guard's) replaces it. Otherwise it is io.EOF.
func (b *answerBody) interrupted() error {
	if b.req != nil {
		if err := b.req.Context().Err(); err != nil {
			return err
		}
	}
	if gerr := b.g.ended(); gerr != nil && !b.closing.Load() {
		return gerr
	}
	return io.EOF
}

// fail ends the exchange with err: io.EOF is a normal end, errTooLarge
// closes the underlying body at once so nothing more is read.
func (b *answerBody) fail(err error) {
	if err == errTooLarge {
		b.rc.Close()
	}
	if b.closing.Load() {
		err = nil
	}
	b.finish(err)
}

// finish records the exchange's end once.
func (b *answerBody) finish(err error) {
	var kind ErrKind
	var detail string
	failed := err != nil && err != io.EOF
	if failed {
		kind, detail = b.g.classify(err, b.req)
	}
	end := b.g.now()
	b.g.mu.Lock()
	defer b.g.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if b.counted {
		b.g.answerEnded()
	}
	b.ex.Duration = end.Sub(b.ex.Start)
	if failed && b.ex.ErrKind == ErrNone {
		b.ex.ErrKind, b.ex.Detail, b.ex.Err = kind, detail, err.Error()
	}
}

// Close ends the exchange and closes the underlying body.
func (b *answerBody) Close() error {
	b.closing.Store(true)
	err := b.rc.Close()
	b.finish(nil)
	return err
}
