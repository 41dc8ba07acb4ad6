package check

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The tool lint's regex engine. A schema's patterns
// (the pattern keyword and patternProperties keys) are compiled by Go's
// regexp, whose cost grows with the program a pattern expands to, not with
// its bytes: `(?:\pL{1000})` is 13 bytes and a thousand instructions, and a
// 39 KB run of it cost seconds and half a gigabyte. The engine parses a
// pattern first, estimates the program from the parse tree without
// expanding it, and refuses one past the bounds before anything is
// compiled. The schema compiler asks for each pattern twice (the
// meta-schema's format "regex", then the keyword): the engine answers the
// second time from its cache.

// Bounds of the tool lint's patterns.
const (
	maxPatternBytes   = 4 << 10 // bytes of one pattern
	maxPatternInsts   = 10_000  // estimated instructions of one pattern's program
	maxLintInsts      = 100_000 // estimated instructions of all patterns of one lint
	maxCachedPatterns = 1_000   // patterns whose outcome one lint keeps
)

// errPatternTooLarge refuses a pattern past maxPatternBytes or
// maxPatternInsts: it is reported, never compiled.
var errPatternTooLarge = errors.New("pattern too large: not validated")

// errLintSpent refuses a pattern once the lint's patterns together would
// pass maxLintInsts: the tool is counted as not checked.
var errLintSpent = errors.New("lint budget spent on patterns")

// patternEngine is the jsonschema.RegexpEngine of one lint run. It is used
// by one goroutine.
type patternEngine struct {
	cache    map[string]patternOutcome
	insts    int   // estimated instructions compiled so far
	compiles int   // regexp.Compile calls so far
	refusal  error // errPatternTooLarge or errLintSpent (wrapped) since the last take
}

// patternOutcome is what compiling one pattern gave.
type patternOutcome struct {
	re  jsonschema.Regexp
	err error
}

func newPatternEngine() *patternEngine {
	return &patternEngine{cache: map[string]patternOutcome{}}
}

// compile is the engine: the cached outcome of s, else s parsed, bounded
// and compiled.
func (e *patternEngine) compile(s string) (jsonschema.Regexp, error) {
	o, ok := e.cache[s]
	if !ok {
		o = e.compileNew(s)
		if len(e.cache) < maxCachedPatterns {
			e.cache[s] = o
		}
	}
	if errors.Is(o.err, errPatternTooLarge) || errors.Is(o.err, errLintSpent) {
		e.refusal = o.err
	}
	return o.re, o.err
}

// compileNew parses s, refuses it past the bounds and compiles it.
func (e *patternEngine) compileNew(s string) patternOutcome {
	if len(s) > maxPatternBytes {
		return patternOutcome{err: fmt.Errorf("%w (%d bytes; at most %d)", errPatternTooLarge, len(s), maxPatternBytes)}
	}
	tree, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return patternOutcome{err: fmt.Errorf("parse pattern: %w", err)}
	}
	n := 2 + progSize(tree, maxPatternInsts) // the program's fail and match
	if n > maxPatternInsts {
		return patternOutcome{err: fmt.Errorf("%w (over %d instructions once expanded)", errPatternTooLarge, maxPatternInsts)}
	}
	if e.insts+n > maxLintInsts {
		return patternOutcome{err: errLintSpent}
	}
	e.insts += n
	e.compiles++
	re, err := regexp.Compile(s)
	if err != nil {
		return patternOutcome{err: fmt.Errorf("compile pattern: %w", err)}
	}
	return patternOutcome{re: re}
}

// take returns the refusal since the last take, and forgets it.
func (e *patternEngine) take() error {
	err := e.refusal
	e.refusal = nil
	return err
}

// progSize estimates the instructions regexp/syntax compiles re to, as
// Simplify expands its counted repeats, stopping at limit+1 so that nested
// repeats cannot overflow.
func progSize(re *syntax.Regexp, limit int) int {
	sum := func(subs []*syntax.Regexp, n int) int {
		for _, s := range subs {
			n += progSize(s, limit)
			if n > limit {
				return limit + 1
			}
		}
		return n
	}
	switch re.Op {
	case syntax.OpLiteral:
		return min(len(re.Rune)+1, limit+1)
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sum(re.Sub, 2)
	case syntax.OpConcat:
		return sum(re.Sub, 1)
	case syntax.OpAlternate:
		return sum(re.Sub, len(re.Sub))
	case syntax.OpRepeat:
		copies := max(re.Max, re.Min, 1) // x{n,} is n copies and a star
		sub := sum(re.Sub, 2)
		if sub > limit/copies {
			return limit + 1
		}
		return copies * sub
	}
	return 1
}
