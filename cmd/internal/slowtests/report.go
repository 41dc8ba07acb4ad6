package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"plug.directory/prober/cmd/internal/gotestjson"
)

// event is one line of `go test -json`.
type event = gotestjson.Event

// key names a test in its package.
type key struct{ pkg, test string }

// report reads the events of a run, printing as it goes what go test
// prints without -json, and keeps each test's time.
type report struct {
	pending map[key][]string // output of tests still running
	times   map[key]float64  // seconds, of tests that ended (top-level only)
}

// read reads events from r to its end, printing to w. A line that is not
// an event is printed as it is. It fails only when r does.
func (rep *report) read(r io.Reader, w io.Writer) error {
	rep.pending, rep.times = map[key][]string{}, map[key]float64{}
	return gotestjson.Read(r, w, func(e event) { rep.event(e, w) })
}

// event handles one event: a test's output is kept until it ends, and
// printed only when it failed (with its subtests' that failed, in their
// order); a package's own output is printed, but for the PASS line that
// only -v prints; a package that ends prints what its unfinished tests
// said (a timeout's panic names them).
func (rep *report) event(e event, w io.Writer) {
	k := key{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		io.WriteString(w, e.Output)
	case e.Test == "" && e.Action == "output":
		if strings.HasPrefix(e.Output, "FAIL\t") {
			rep.flush(e.Package, true, w) // before the package's closing line
		}
		if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
			io.WriteString(w, e.Output)
		}
	case e.Test == "" && (e.Action == "fail" || e.Action == "pass" || e.Action == "skip"):
		rep.flush(e.Package, e.Action == "fail", w)
	case e.Action == "output":
		if !strings.HasPrefix(e.Output, "=== ") { // -v's lines, which go test prints only with -v
			rep.pending[k] = append(rep.pending[k], e.Output)
		}
	case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
		if e.Action == "fail" {
			io.WriteString(w, strings.Join(rep.pending[k], ""))
		}
		delete(rep.pending, k)
		if e.Action != "skip" && !strings.Contains(e.Test, "/") {
			rep.times[k] = e.Elapsed
		}
	}
}

// flush forgets the output of the tests of pkg that did not end, after
// printing it when print is set.
func (rep *report) flush(pkg string, print bool, w io.Writer) {
	var left []key
	for p := range rep.pending {
		if p.pkg == pkg {
			left = append(left, p)
		}
	}
	slices.SortFunc(left, func(a, b key) int { return strings.Compare(a.test, b.test) })
	for _, p := range left {
		if print {
			io.WriteString(w, strings.Join(rep.pending[p], ""))
		}
		delete(rep.pending, p)
	}
}

// printSlowest prints the n slowest tests that ended, slowest first (ties
// by package and name), after a line saying how many ended.
func (rep *report) printSlowest(w io.Writer, n int) {
	if n <= 0 || len(rep.times) == 0 {
		return
	}
	keys := make([]key, 0, len(rep.times))
	for k := range rep.times {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(rep.times[b], rep.times[a]), strings.Compare(a.pkg, b.pkg), strings.Compare(a.test, b.test))
	})
	fmt.Fprintf(w, "the %d slowest of %d tests (top-level, each on its own clock; parallel ones overlap):\n", min(n, len(keys)), len(keys))
	for _, k := range keys[:min(n, len(keys))] {
		fmt.Fprintf(w, "%10s  %s %s\n", time.Duration(rep.times[k]*float64(time.Second)).Round(10*time.Millisecond), k.pkg, k.test)
	}
}
