package check

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"plug.directory/prober/data"
)

// The tool lint: what clients enforce of a tools/list
// answer, checked on the tools the check listed anyway. It runs in the
// check, not in publish from the stored definition sets: those leave out
// outputSchema (it is not fingerprinted) and sets over 1 MB, and the lint
// costs far less than the check's own decoding of the answer (see
// BenchmarkCheck), so each check publishes its own list.
//
// A schema is validated with santhosh-tekuri/jsonschema, which compiles it
// against its draft's meta-schema (embedded: 2020-12 unless $schema names
// another) and resolves its $refs, cycles included. google/jsonschema-go,
// which the SDK uses, only speaks 2020-12 and does not check a schema
// against the meta-schema. Its loader refuses every URL: a remote $ref or
// an unknown $schema is a problem, never a request.

// maxSchemaDepth bounds how deeply a schema may nest before it is reported
// instead of compiled: clients give up on such schemas too, and the
// compiler recurses.
const maxSchemaDepth = 64

// maxSchemaObjects bounds the JSON objects of one schema (each may be a
// subschema) before it is reported instead of compiled: the compiler's time
// grows with their square (18,000 properties took it 1.6 s, 8,000 $defs
// referring to each other 3 s).
const maxSchemaObjects = 2_000

// maxToolNameLen is the spec's bound on a tool name.
const maxToolNameLen = 128

// The budget of one check's tool lint: past any of them
// the schemas of the remaining tools are not validated, and the lint says
// how many it left. Names, duplicates and descriptions cost next to nothing
// and are checked for every tool. The time sits inside the check's own
// deadline (rule N10): the lint stops at whichever comes first.
const (
	lintMaxTools   = 1_000           // tools whose schemas are validated
	lintMaxBytes   = 1 << 20         // bytes of schema validated, all tools together (estimated from the decoded JSON)
	lintMaxObjects = 10_000          // JSON objects of schema validated, all tools together
	lintMaxTime    = 1 * time.Second // of the lint's own work, all pages together
)

// errRemoteRef is the refusing loader's answer to every URL.
var errRemoteRef = errors.New("not fetched: the check loads no schema from anywhere")

// refuseLoader is the schema compiler's loader: it loads nothing.
type refuseLoader struct{}

// Load refuses url.
func (refuseLoader) Load(string) (any, error) { return nil, errRemoteRef }

// linter lints the tools of one check, page by page, within its budget. It
// is used by one goroutine.
type linter struct {
	now      func() time.Time
	used     time.Duration // spent linting, pages before this one
	start    time.Time     // when this page's lint began
	engine   *patternEngine
	problems []data.ToolProblem
	seen     map[string]int // tools listed under each name so far
	tools    int            // tools whose schemas were validated
	size     schemaSize     // of the schemas validated
	skipped  int            // tools whose schemas were not validated: the budget
	spent    string         // which budget ran out first, "" while none did
	oversize bool           // a tool was left for the bytes or objects it would have taken
}

// newLinter returns a linter reading the time from now.
func newLinter(now func() time.Time) *linter {
	return &linter{now: now, engine: newPatternEngine(), seen: map[string]int{}}
}

// add lints tools, the next page of the list, stopping once the problems
// are at data.MaxToolProblems. Once ctx is done, no more schemas are
// validated.
func (l *linter) add(ctx context.Context, tools []listedTool) {
	l.start = l.now()
	defer func() { l.used += l.now().Sub(l.start) }()
	for i, t := range tools {
		if len(l.problems) >= data.MaxToolProblems {
			if l.spent != "" {
				l.skipped += len(tools) - i // the budget left them, not the list
			}
			return
		}
		if msg := badToolName(t.name); msg != "" {
			l.keep(t.name, data.ToolRuleName, msg)
		}
		l.seen[t.name]++
		if l.seen[t.name] == 2 {
			l.keep(t.name, data.ToolRuleDuplicate, "listed more than once: clients cannot tell which to call")
		}
		if strings.TrimSpace(t.description) == "" {
			l.keep(t.name, data.ToolRuleNoDescription, "no description: a model cannot tell when to use it")
		}
		if t.input == nil {
			l.keep(t.name, data.ToolRuleInputSchema, "no inputSchema")
		}
		l.schemas(ctx, t)
	}
}

// schemas validates the schemas of t when the budget allows, else counts t
// as not checked.
func (l *linter) schemas(ctx context.Context, t listedTool) {
	if t.input == nil && t.output == nil {
		return
	}
	switch {
	case l.spent != "":
	case ctx.Err() != nil || l.used+l.now().Sub(l.start) >= lintMaxTime:
		l.spent = fmt.Sprintf("out of time, at most %v", lintMaxTime)
	case l.tools == lintMaxTools:
		l.spent = fmt.Sprintf("at most %d tools", lintMaxTools)
	}
	if l.spent != "" {
		l.skipped++
		return
	}
	size := l.size.add(compiled(t.input)).add(compiled(t.output))
	if size.bytes > lintMaxBytes || size.objects > lintMaxObjects {
		// This schema is left alone; smaller ones after it may fit.
		l.skipped++
		l.oversize = true
		return
	}
	l.tools++
	l.size = size
	for _, s := range []struct {
		schema any
		rule   string
	}{{t.input, data.ToolRuleInputSchema}, {t.output, data.ToolRuleOutputSchema}} {
		if s.schema == nil {
			continue
		}
		msg, err := badSchema(s.schema, l.engine)
		if err != nil {
			l.spent = fmt.Sprintf("patterns of at most about %d instructions", maxLintInsts)
			l.skipped++
			return
		}
		if msg != "" {
			l.keep(t.name, s.rule, msg)
		}
	}
}

// keep keeps one problem while there is room.
func (l *linter) keep(tool, rule, msg string) {
	if len(l.problems) < data.MaxToolProblems {
		l.problems = append(l.problems, data.ToolProblem{Tool: tool, Rule: rule, Message: msg})
	}
}

// result returns the problems of the tools added, in their order, at most
// data.MaxToolProblems; when the budget left tools unchecked, the last one
// says how many and why.
func (l *linter) result() []data.ToolProblem {
	out := l.problems
	if l.skipped == 0 {
		return out
	}
	if len(out) == data.MaxToolProblems {
		out = out[:data.MaxToolProblems-1]
	}
	var whys []string
	if l.spent != "" {
		whys = append(whys, l.spent)
	}
	if l.oversize {
		whys = append(whys, fmt.Sprintf("at most %d bytes and %d objects", lintMaxBytes, lintMaxObjects))
	}
	why := strings.Join(whys, "; ")
	msg := fmt.Sprintf("lint budget: %s not checked (schemas validated: %s)", data.Plural(l.skipped, "tool"), why)
	return append(out, data.ToolProblem{Rule: data.ToolRuleBudget, Message: msg})
}

// listedTool is what the lint reads of one listed tool; input and output
// are the schemas as decoded from JSON (nil when absent or null).
type listedTool struct {
	name, description string
	input, output     any
}

// badToolName says why name is not a tool name the spec allows, or "".
func badToolName(name string) string {
	if len(name) > maxToolNameLen {
		return fmt.Sprintf("name is %d bytes long; at most %d are allowed", len(name), maxToolNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' {
			continue
		}
		return fmt.Sprintf("name has %q at byte %d; only A-Z a-z 0-9 _ - . are allowed", string(rune(c)), i)
	}
	return ""
}

// badSchema says why schema is not a JSON Schema object of type "object"
// valid against its meta-schema, or "", compiling its patterns with
// engine. Its error is errLintSpent when the engine refused a pattern for
// the lint's budget: then schema was not validated.
func badSchema(schema any, engine *patternEngine) (string, error) {
	obj, ok := schema.(map[string]any)
	if !ok {
		return fmt.Sprintf("not a JSON object but %s", jsonKind(schema)), nil
	}
	if obj["type"] != "object" {
		return `has no "type": "object"`, nil
	}
	if depth(schema, 0) > maxSchemaDepth {
		return fmt.Sprintf("nested deeper than %d levels: not validated", maxSchemaDepth), nil
	}
	if measure(schema).objects > maxSchemaObjects {
		return fmt.Sprintf("more than %d objects: not validated", maxSchemaObjects), nil
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(engine.compile)
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "urn:plug.directory:tool-schema"
	err := c.AddResource(loc, schema)
	if err == nil {
		_, err = c.Compile(loc)
	}
	refusal := engine.take()
	switch {
	case errors.Is(refusal, errLintSpent):
		return "", refusal
	case refusal != nil:
		return refusal.Error(), nil
	case err != nil:
		return "not a valid JSON Schema: " + oneLine(err), nil
	}
	return "", nil
}

// schemaSize is how large a decoded schema is.
type schemaSize struct {
	bytes   int // of the JSON it came from: strings and keys with their quotes, 8 per number or literal
	objects int // JSON objects in it
}

// add returns the sum of s and o.
func (s schemaSize) add(o schemaSize) schemaSize {
	return schemaSize{s.bytes + o.bytes, s.objects + o.objects}
}

// compiled returns the size of schema as the budget counts it: nothing
// for one too large to be compiled (badSchema reports it).
func compiled(schema any) schemaSize {
	n := measure(schema)
	if n.objects > maxSchemaObjects {
		return schemaSize{}
	}
	return n
}

// measure returns the size of v, stopping soon after lintMaxBytes or
// lintMaxObjects.
func measure(v any) schemaSize {
	var n schemaSize
	var walk func(v any)
	walk = func(v any) {
		if n.bytes > lintMaxBytes || n.objects > lintMaxObjects {
			return
		}
		switch x := v.(type) {
		case nil:
		case map[string]any:
			n.bytes += 2
			n.objects++
			for k, e := range x {
				n.bytes += len(k) + 4
				walk(e)
			}
		case []any:
			n.bytes += 2
			for _, e := range x {
				n.bytes++
				walk(e)
			}
		case string:
			n.bytes += len(x) + 2
		default:
			n.bytes += 8
		}
	}
	walk(v)
	return n
}

// oneLine is an error's message on one line, at most 300 bytes.
func oneLine(err error) string {
	var ve *jsonschema.SchemaValidationError
	if errors.As(err, &ve) && ve.Err != nil {
		err = ve.Err
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "a number"
}

// depth returns how deeply v nests, stopping once past maxSchemaDepth.
func depth(v any, d int) int {
	if d > maxSchemaDepth {
		return d
	}
	m := d
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			m = max(m, depth(e, d+1))
		}
	case []any:
		for _, e := range x {
			m = max(m, depth(e, d+1))
		}
	}
	return m
}
