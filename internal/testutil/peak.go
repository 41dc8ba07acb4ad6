package testutil

import (
	"runtime/metrics"
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
