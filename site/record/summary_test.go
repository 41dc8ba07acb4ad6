package record

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"plug.directory/prober/data"
)

// TestMergeChecks: a server's older checks and its history merge into one
// ascending list without repeats, the first list's check winning, whether
// the older ones come first, hold the history's too (as they do), are
// interleaved with it or out of order.
func TestMergeChecks(t *testing.T) {
	t.Parallel()
	c := func(at int64, o data.Outcome) PastCheck { return PastCheck{At: at, Status: o} }
	w, f := data.Working, data.Failing
	for _, tc := range []struct {
		name      string
		a, b, out []PastCheck
	}{
		{"older_first", []PastCheck{c(1, w), c(2, w)}, []PastCheck{c(3, f), c(4, w)}, []PastCheck{c(1, w), c(2, w), c(3, f), c(4, w)}},
		{"none_older", nil, []PastCheck{c(3, f)}, []PastCheck{c(3, f)}},
		{"no_history", []PastCheck{c(1, w)}, nil, []PastCheck{c(1, w)}},
		{"overlap", []PastCheck{c(1, w), c(2, w), c(3, w)}, []PastCheck{c(2, f), c(3, f), c(4, f)}, []PastCheck{c(1, w), c(2, w), c(3, w), c(4, f)}}, // the first list's check wins
		{"interleaved", []PastCheck{c(1, w), c(5, w)}, []PastCheck{c(2, f), c(6, f)}, []PastCheck{c(1, w), c(2, f), c(5, w), c(6, f)}},
		{"history_first", []PastCheck{c(7, w)}, []PastCheck{c(2, f), c(3, f)}, []PastCheck{c(2, f), c(3, f), c(7, w)}},
		{"older_holds_the_history", []PastCheck{c(1, w), c(2, w), c(3, w)}, []PastCheck{c(2, w), c(3, w)}, []PastCheck{c(1, w), c(2, w), c(3, w)}},
		{"out_of_order", []PastCheck{c(5, w), c(1, w)}, []PastCheck{c(3, f), c(1, f)}, []PastCheck{c(1, w), c(3, f), c(5, w)}}, // damage that decoded
	} {
		if got := MergeChecks(tc.a, tc.b); !slices.Equal(got, tc.out) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.out)
		}
	}
}

// TestMergeChecksAsSorted: two ascending lists, with starts in common,
// repeated within one, runs of either, merge as the two lists one after
// the other sorted (stably) and their repeats dropped: the first list's
// check wins, and the first of a list's repeats.
func TestMergeChecksAsSorted(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(35, 7))
	list := func(o data.Outcome) []PastCheck {
		cs := make([]PastCheck, rng.IntN(12))
		at := int64(rng.IntN(4))
		for i := range cs {
			at += int64(rng.IntN(3)) // 0: a repeat
			cs[i] = PastCheck{At: at, Status: o, Detail: strconv.Itoa(i)}
		}
		return cs
	}
	for n := range 5000 {
		a, b := list(data.Working), list(data.Failing)
		want := slices.Concat(a, b)
		slices.SortStableFunc(want, func(x, y PastCheck) int { return cmpInt(x.At, y.At) })
		want = slices.CompactFunc(want, func(x, y PastCheck) bool { return x.At == y.At })
		if got := MergeChecks(a, b); !slices.Equal(got, want) {
			t.Fatalf("case %d: %v and %v merge as %v, want %v", n, a, b, got, want)
		}
	}
}
