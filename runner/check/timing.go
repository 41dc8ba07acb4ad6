package check

import (
	"slices"
	"time"

	"plug.directory/prober/data"
)

// addPhase adds the time since start to the phase *p of the check's
// timings (g.timing.DNS, .Connect, .TLS), which then applies. The dialer
// calls it as each step ends, failed ones included: a connect that timed
// out cost the check its time too.
func (g *Guard) addPhase(p **time.Duration, start time.Time) {
	d := g.now().Sub(start)
	g.mu.Lock()
	defer g.mu.Unlock()
	if *p == nil {
		*p = new(time.Duration)
	}
	**p += d
}

// timings returns where the check's time went: the phases the dialer
// measured and each answer's first byte (Exchange.FirstByte), in request
// order; nil when the check measured nothing (it never dialled). Callers
// hold g.mu.
func (g *Guard) timings() *data.Timings {
	t := data.Timings{DNS: clonePtr(g.timing.DNS), Connect: clonePtr(g.timing.Connect), TLS: clonePtr(g.timing.TLS)}
	for _, ex := range g.ex {
		if ex.FirstByte > 0 {
			t.FirstByte = append(t.FirstByte, ex.FirstByte)
		}
	}
	if t.DNS == nil && t.Connect == nil && t.TLS == nil && len(t.FirstByte) == 0 {
		return nil
	}
	t.FirstByte = slices.Clip(t.FirstByte)
	return &t
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
