package check

import (
	"io"
	"net/http"
	"sync"
	"time"
)

// reuseWait bounds how long a POST waits for the previous answer's body to
// be done, so that an HTTP/1.1 connection can carry it.
const reuseWait = 100 * time.Millisecond

// oneConnection keeps a check on one connection over HTTP/1.1 (HTTP/2
// multiplexes anyway). The SDK hands an answer to its caller as soon as the
// JSON-RPC response is in, and finishes reading the body (an event stream's
// end) in the background; the next POST would find the connection still busy
// and dial another. So a POST waits, at most reuseWait, until the bodies of
// earlier HTTP/1.x answers are done. GETs (the legacy stream, which stays
// open) never wait.
type oneConnection struct {
	rt http.RoundTripper

	mu   sync.Mutex
	open int           // HTTP/1.x answer bodies not yet read to the end or closed
	idle chan struct{} // closed when open drops to zero
}

// RoundTrip waits for the connection to be free before a POST, then passes
// req on, tracking the answer's body.
func (o *oneConnection) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		o.waitIdle(req)
	}
	resp, err := o.rt.RoundTrip(req)
	if err != nil || resp.ProtoMajor != 1 || req.Method != http.MethodPost {
		return resp, err
	}
	o.mu.Lock()
	if o.open == 0 {
		o.idle = make(chan struct{})
	}
	o.open++
	o.mu.Unlock()
	resp.Body = &doneBody{ReadCloser: resp.Body, done: o.release}
	return resp, nil
}

// waitIdle waits until no tracked body is open, reuseWait passes or req's
// context ends.
func (o *oneConnection) waitIdle(req *http.Request) {
	o.mu.Lock()
	if o.open == 0 {
		o.mu.Unlock()
		return
	}
	idle := o.idle
	o.mu.Unlock()
	t := time.NewTimer(reuseWait)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-req.Context().Done():
	}
}

// release marks one tracked body done.
func (o *oneConnection) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open--
	if o.open == 0 {
		close(o.idle)
	}
}

// doneBody calls done once, at the body's end, first error or Close.
type doneBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *doneBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
