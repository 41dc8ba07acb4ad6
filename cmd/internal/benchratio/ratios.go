package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"plug.directory/prober/cmd/internal/gotestjson"
)

// baseline pairs benchmarks of a package (its import path's last
// elements) with the benchmark that measures the floor of the same work:
// a benchmark named bench, or bench/SUB, is divided by base, or base/SUB.
type baseline struct{ pkg, bench, base string }

// baselines are the pairs `make bench` divides. The benchmarks that
// measure their own floor report it as a metric "x-..." instead.
var baselines = []baseline{
	{"runner/check", "BenchmarkCheck", "BenchmarkBaselineSDK"},
	{"runner/fleet", "BenchmarkStart", "BenchmarkStartBaseline"},
	{"site", "BenchmarkPublishIncremental", "BenchmarkBaselineIndexRewrite"},
	{"site", "BenchmarkPublishFull", "BenchmarkBaselineIndexRewrite"},
	{"site", "BenchmarkReadOlder", "BenchmarkBaselineReadOlder"},
	{"site", "BenchmarkLoadStore", "BenchmarkBaselineLoadStore"},
	{"site/pages", "BenchmarkIndexRows", "BenchmarkBaselineIndexRowsTemplate"},
	{"site/pages", "BenchmarkServerPage", "BenchmarkBaselineServerPageTemplate"},
	{"site/record", "BenchmarkColumns", "BenchmarkBaselineColumns"},
	{"site/record", "BenchmarkServerFile", "BenchmarkBaselineServerFile"},
}

// result is one benchmark's line: its metrics by unit ("ns/op", "B/op",
// "x-copy-CPU"...).
type result struct {
	pkg, name string // name without the -GOMAXPROCS suffix
	metrics   map[string]float64
}

// results reads a run's events, printing their output as go test prints
// it without -json, and keeps the benchmarks' lines.
type results struct {
	partial map[string]string // a package's output line not ended yet
	list    []result
}

// read reads events from r to its end, printing to w. A line that is not
// an event is printed as it is. It fails only when r does.
func (rs *results) read(r io.Reader, w io.Writer) error {
	rs.partial = map[string]string{}
	return gotestjson.Read(r, w, func(e gotestjson.Event) {
		if e.Action != "output" || e.Test != "" && strings.TrimSpace(e.Output) == e.Test || strings.HasPrefix(e.Output, "=== ") {
			return // what -json adds: a benchmark's name before its line, "=== RUN"
		}
		fmt.Fprint(w, e.Output)
		// A benchmark's line can come in two events: its name, then its
		// figures.
		text := rs.partial[e.Package] + e.Output
		for {
			line, rest, ok := strings.Cut(text, "\n")
			if !ok {
				break
			}
			if res, ok := parseBench(e.Package, line); ok {
				rs.list = append(rs.list, res)
			}
			text = rest
		}
		rs.partial[e.Package] = text
	})
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseBench parses a benchmark's result line: its name, its iterations,
// then pairs of a value and its unit.
func parseBench(pkg, line string) (result, bool) {
	fields := strings.Fields(line)
	if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
		return result{}, false
	}
	if _, err := strconv.Atoi(fields[1]); err != nil {
		return result{}, false
	}
	res := result{pkg: pkg, name: procsSuffix.ReplaceAllString(fields[0], ""), metrics: map[string]float64{}}
	for i := 2; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return result{}, false
		}
		res.metrics[fields[i+1]] = v
	}
	return res, true
}

// inPkg reports whether the import path pkg ends with the elements suffix.
func inPkg(pkg, suffix string) bool {
	return pkg == suffix || strings.HasSuffix(pkg, "/"+suffix)
}

// ratio is one row of the table.
type ratio struct {
	pkg, bench, over, unit string
	value                  float64
}

// ratios returns the table's rows: each benchmark of a pair over its
// baseline in ns/op (and B/op where both report it), sub-benchmarks over
// the baseline's of the same name or over the baseline itself; then every
// "x-" metric, and every "-x-" one: a floor the benchmark measured over
// another ("atomic-x-copy-CPU"). A pair whose baseline did not run is left
// out.
func (rs *results) ratios() []ratio {
	var out []ratio
	find := func(pkg, name string) (result, bool) {
		i := slices.IndexFunc(rs.list, func(r result) bool { return r.pkg == pkg && r.name == name })
		if i < 0 {
			return result{}, false
		}
		return rs.list[i], true
	}
	for _, r := range rs.list {
		for _, bl := range baselines {
			sub, ok := strings.CutPrefix(r.name, bl.bench)
			if !ok || (sub != "" && sub[0] != '/') || !inPkg(r.pkg, bl.pkg) {
				continue
			}
			base, ok := find(r.pkg, bl.base+sub)
			if !ok {
				base, ok = find(r.pkg, bl.base)
			}
			if !ok {
				continue
			}
			for _, unit := range []string{"ns/op", "B/op"} {
				if v, b := r.metrics[unit], base.metrics[unit]; v > 0 && b > 0 {
					out = append(out, ratio{r.pkg, r.name, base.name, unit, v / b})
				}
			}
		}
		units := make([]string, 0, len(r.metrics))
		for unit := range r.metrics {
			if strings.HasPrefix(unit, "x-") || strings.Contains(unit, "-x-") {
				units = append(units, unit)
			}
		}
		slices.Sort(units)
		for _, unit := range units {
			out = append(out, ratio{r.pkg, r.name, "its own baseline", unit, r.metrics[unit]})
		}
	}
	return out
}

// printRatios prints the table of ratios, or says there is none.
func (rs *results) printRatios(w io.Writer) {
	rows := rs.ratios()
	fmt.Fprintln(w, "\nratios measured in this run (benchmark / its baseline; 1 is the baseline's cost):")
	if len(rows) == 0 {
		fmt.Fprintln(w, "  none: no benchmark ran beside its baseline")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  package\tbenchmark\tover\tof\tratio")
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.3g\n", r.pkg, r.bench, r.over, r.unit, r.value)
	}
	tw.Flush()
}
