package check

import (
	"regexp/syntax"
	"strings"
	"testing"
)

// TestProgSize proves the engine's estimate of a pattern's program is
// never below the program regexp/syntax compiles (so the bound holds), and
// not so far above it that an ordinary pattern is refused.
func TestProgSize(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		`^[a-z]+$`, `^\d{3}-\d{4}$`, `[a-z]{1,64}`, `(a|b|c)*`, `x{2,}`, `^.{0,1000}$`, `(?:\pL{100}){3}`,
		`^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$`, `^(?:[0-9]{1,3}\.){3}[0-9]{1,3}$`, `(?i)hello|world`,
		`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, `((a{2,5}){3}b?)+`, strings.Repeat("ab", 100),
	} {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		est := progSize(re, 1<<30) + 2 // as compileNew counts
		if est < len(prog.Inst) || est > 3*len(prog.Inst)+8 {
			t.Errorf("%s: estimated %d instructions, compiled %d", p, est, len(prog.Inst))
		}
	}
}

// TestPatternEngine proves the engine's refusals: by bytes before parsing,
// by the expanded program before compiling, by the lint's total; an
// invalid pattern is an error of its own, and every outcome is cached.
func TestPatternEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, pattern string
		used          int // instructions already compiled in this lint
		want          string
		compiles      int
	}{
		{name: "N9_fine", pattern: `^[a-z]{1,64}$`, compiles: 1},
		{name: "N9_bytes", pattern: strings.Repeat("a", 4097), want: "pattern too large: not validated (4097 bytes; at most 4096)"},
		{name: "N9_expanded", pattern: strings.Repeat(`(?:\pL{1000})`, 11), want: "pattern too large: not validated (over 10000 instructions once expanded)"},
		{name: "N9_nested_repeats", pattern: strings.Repeat(`(?:(?:\pL{10}){10}){10}`, 11), want: "pattern too large: not validated (over 10000 instructions once expanded)"},
		{name: "N10_lint_total", pattern: `a{1000}`, used: maxLintInsts - 500, want: errLintSpent.Error()},
		{name: "invalid", pattern: `(`, want: "parse pattern: error parsing regexp: missing closing ): `(`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newPatternEngine()
			e.insts = tc.used
			for range 2 {
				_, err := e.compile(tc.pattern)
				got := ""
				if err != nil {
					got = err.Error()
				}
				if got != tc.want {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			}
			if e.compiles != tc.compiles {
				t.Errorf("%d compiles, want %d (the second answer from the cache)", e.compiles, tc.compiles)
			}
		})
	}
}
