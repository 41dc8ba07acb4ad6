package planner

import (
	"math/rand/v2"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestS2SlotPinned: a server's slot comes from a stable hash of its id; a
// change of the hash would move every server's minute, so it is pinned.
func TestS2SlotPinned(t *testing.T) {
	for id, want := range map[string]time.Duration{
		"weather": 19*time.Hour + 30*time.Minute + 30*time.Second,
		"alpha":   21*time.Hour + 31*time.Minute + 42*time.Second,
	} {
		if got := SlotOf(id); got != want {
			t.Errorf("SlotOf(%q) = %v, want %v", id, got, want)
		}
	}
	if got := data.StableHash("srv-0000001", 7); got != 9150212367795311954 {
		t.Errorf("StableHash changed: %d", got)
	}
}

// TestS4StretchedCycles: on a stretched host, next finds the first of the
// server's own cycles, and a server gets one cycle in every stretch/8.
func TestS4StretchedCycles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		c := cadence{tier: 3600, offset: r.Int64N(3600), phase: r.Int64N(1 << 20), stretch: 8 + r.Int64N(200)}
		selected := func(j int64) bool {
			return c.stretch == 8 || floorDiv(8*(j+c.phase), c.stretch) != floorDiv(8*(j+c.phase-1), c.stretch)
		}
		t0 := int64(1_796_000_000)
		n := 0
		for j := t0 / 3600; j < t0/3600+4000; j++ {
			at := j*3600 + c.offset
			if selected(j) {
				n++
			}
			// next from any second of the cycle before lands on the first selected cycle.
			want := j
			for !selected(want) {
				want++
			}
			if got := c.next(at); got != want*3600+c.offset {
				t.Fatalf("%+v: next(%d) = %d, want %d", c, at, got, want*3600+c.offset)
			}
		}
		if share, want := float64(n)/4000, 8/float64(c.stretch); share < want*0.97-0.001 || share > want*1.03+0.001 {
			t.Errorf("%+v: %.4f of cycles selected, want %.4f", c, share, want)
		}
	}
}

// TestHostStretch: a host within RoutineShare routine checks an hour is not
// stretched; beyond it, just enough that it fits.
func TestHostStretch(t *testing.T) {
	for _, c := range []struct {
		hourly, daily int64
		want          int64
	}{
		{0, 0, 8}, {100, 0, 8}, {101, 0, 9}, {0, 2400, 8}, {0, 2401, 9}, {300, 1000, 28}, {0, 50_000, 167},
	} {
		got := hostStretch(24*c.hourly + c.daily)
		if got != c.want {
			t.Errorf("%d hourly, %d daily: stretch %d/8, want %d/8", c.hourly, c.daily, got, c.want)
		}
		if perHour := float64(24*c.hourly+c.daily) / 24 * 8 / float64(got); perHour > RoutineShare {
			t.Errorf("%d hourly, %d daily: %.1f routine checks an hour, over %d", c.hourly, c.daily, perHour, RoutineShare)
		}
	}
}
