package main

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestNoAnswerHasNoLatency follows a check that got no answer
// from the wire to the site: a server that takes the request and
// never answers, checked by a planned minute with a 1 s timeout, is
// failing with "no answer", the history keeps the check's measured
// duration, and the published latency_ms is null in the last result and
// the history, with no daily latency. The server counts what it received:
// the one request the check sent. With -short the timeout is 250 ms (long
// enough for a loopback request to arrive); make test waits out the 1 s.
func TestNoAnswerHasNoLatency(t *testing.T) {
	t.Parallel() // waits out a real timeout: alongside the other tests
	timeout := time.Second
	if testing.Short() {
		timeout = 250 * time.Millisecond
	}
	var got atomic.Int32
	hold := make(chan struct{})
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select { // never answers: the check gives up first
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hold) })
	c := planOneCheck(t, "silent", s.url)
	r := c.run(t, "-lab", "-resolve", s.resolve, "-ca-file", s.caFile, "-timeout", timeout.String())
	if r.Status != data.Failing || !strings.HasPrefix(r.Detail, "no answer") || r.HTTPStatus != 0 || r.Duration < timeout || got.Load() != int32(r.Requests) || r.Requests < 1 {
		t.Fatalf("result %s %q, HTTP %d, took %v, %d requests (the server got %d); want failing, no answer, the %v timeout measured",
			r.Status, r.Detail, r.HTTPStatus, r.Duration, r.Requests, got.Load(), timeout)
	}
	f, _ := c.publish(t, r.Finished.Add(time.Minute))
	if f.LastResult == nil || f.LastResult.LatencyMS != nil || f.LastResult.HTTPStatus != nil || len(f.History) != 1 || f.History[0].LatencyMS != nil {
		t.Errorf("last result %+v, history %+v; want latency_ms and http_status null", f.LastResult, f.History)
	}
	if today := f.Daily[len(f.Daily)-1]; today.Counted != 1 || today.LatencyP50MS != nil || f.LatencyP50 != nil {
		t.Errorf("today %+v, 30-day median %v; want the check counted and no latency", today, f.LatencyP50)
	}
}
