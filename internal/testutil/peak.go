package testutil

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// SamplePeak reads the runtime metric named metric (a runtime/metrics
// name of kind uint64, such as "/memory/classes/total:bytes") every 5 ms
// until stop closes, and returns the most it has seen so far, for a
// benchmark's peak-memory figure.
func SamplePeak(metric string, stop <-chan struct{}) *atomic.Uint64 {
	var peak atomic.Uint64
	s := []metrics.Sample{{Name: metric}}
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return &peak
}

// HeapPeak follows the peak of the heap without waking the process between
// collections, for a benchmark that measures the CPU of the process it
// runs in: SamplePeak's ticker wakes it every few milliseconds, which a
// publish of 100 ms pays for in its CPU (3 to 13 % at 1 ms). The heap
// grows until a collection ends, to about the goal the collector paced
// that collection for; at the end of each collection HeapPeak notes that
// goal and the bytes of heap objects, live or not yet swept. stop returns
// the largest of those and of the heap objects then, in bytes, and how
// many collections ended meanwhile.
func HeapPeak() (stop func() (peak uint64, collections int)) {
	var (
		mu      sync.Mutex
		peak    uint64
		n       int
		stopped bool
	)
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	goal := s[0].Value.Uint64() // of the next collection
	var arm func()
	arm = func() {
		// A sentinel of its own allocation (not a tiny one shared with
		// others), unreachable as soon as made: the next collection to
		// end runs its cleanup.
		runtime.AddCleanup(new([64]byte), func(struct{}) {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return
			}
			metrics.Read(s)
			peak, n = max(peak, goal, s[1].Value.Uint64()), n+1
			goal = s[0].Value.Uint64()
			arm()
		}, struct{}{})
	}
	arm()
	return func() (uint64, int) {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		metrics.Read(s)
		return max(peak, s[1].Value.Uint64()), n
	}
}
