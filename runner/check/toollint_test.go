package check

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestToolLint proves the tool lint against a server whose tools break
// each rule clients enforce: the check stays working (advice, not a
// verdict), names each problem with its tool and rule, resolves no remote
// $ref, survives a $ref cycle and deep nesting, and the server receives
// exactly the requests of a plain check.
func TestToolLint(t *testing.T) {
	t.Parallel()
	deep := map[string]any{"type": "object"}
	for range 100 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"x": deep}}
	}
	tools := []map[string]any{
		{"name": "good", "description": "fine", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
		{"name": "bad name!", "description": "d", "inputSchema": map[string]any{"type": "object"}},
		{"name": strings.Repeat("n", 129), "description": "d", "inputSchema": map[string]any{"type": "object"}},
		{"name": "dup", "description": "d", "inputSchema": map[string]any{"type": "object"}},
		{"name": "dup", "description": "d", "inputSchema": map[string]any{"type": "object"}},
		{"name": "silent", "inputSchema": map[string]any{"type": "object"}},
		{"name": "stringy", "description": "d", "inputSchema": map[string]any{"type": "string"}},
		{"name": "invalid", "description": "d", "inputSchema": map[string]any{"type": "object", "properties": 5}},
		{"name": "remote", "description": "d", "inputSchema": map[string]any{"type": "object", "$ref": "https://schemas.example/x.json"}},
		{"name": "cycle", "description": "d", "inputSchema": map[string]any{"type": "object", "$defs": map[string]any{"a": map[string]any{"$ref": "#/$defs/a"}}, "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/a"}}}},
		{"name": "deep", "description": "d", "inputSchema": deep},
		{"name": "badout", "description": "d", "inputSchema": map[string]any{"type": "object"}, "outputSchema": map[string]any{"type": "object", "required": "x"}},
	}
	mux := legacyMux("2025-06-18")
	mux["tools/list"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
		writeResult(w, m.ID, map[string]any{"tools": tools})
	}
	srv := startFlowServer(t, mux, serverOpts{})
	res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
	if res.Status != data.Working {
		t.Fatalf("status %s (%s), want working: lint problems are advice; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
	}
	srv.rec.wantSequence(t, "POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list")
	got := map[string]string{}
	for _, p := range res.ToolProblems {
		if p.Message == "" {
			t.Errorf("problem %+v says nothing", p)
		}
		got[p.Tool+" "+p.Rule] = p.Message
	}
	for _, want := range []string{
		"bad name! " + data.ToolRuleName, strings.Repeat("n", 129) + " " + data.ToolRuleName,
		"dup " + data.ToolRuleDuplicate, "silent " + data.ToolRuleNoDescription,
		"stringy " + data.ToolRuleInputSchema, "invalid " + data.ToolRuleInputSchema,
		"remote " + data.ToolRuleInputSchema, "deep " + data.ToolRuleInputSchema, "badout " + data.ToolRuleOutputSchema,
	} {
		if _, ok := got[want]; !ok {
			t.Errorf("no problem %q; got %q", want, got)
		}
	}
	if _, ok := got["good "+data.ToolRuleInputSchema]; ok || len(res.ToolProblems) != 9 {
		b, _ := json.MarshalIndent(res.ToolProblems, "", " ")
		t.Errorf("%d problems, want the 9 above (none of good or cycle):\n%s", len(res.ToolProblems), b)
	}
	if m := got["remote "+data.ToolRuleInputSchema]; !strings.Contains(m, "not fetched") {
		t.Errorf("remote $ref: %q, want it named as not fetched", m)
	}
}

// TestToolLint_worst proves the lint bounded against the worst answers of
// testdata/worst, served by a raw server: each check sends exactly the
// requests of a plain check (one tools/list per page), keeps its verdict,
// and records what the lint refused or left, in the result a page shows.
func TestToolLint_worst(t *testing.T) {
	t.Parallel()
	tooLarge := "pattern too large: not validated"
	pages := func(n int) []string {
		want := []string{"POST server/discover", "POST initialize", "POST notifications/initialized"}
		for range n {
			want = append(want, "POST tools/list")
		}
		return want
	}
	for _, tc := range []struct {
		name, answer string
		status       data.Outcome
		detail       string
		tools        int
		problems     []string // tool, rule and the start of the message of each problem, in order
	}{
		{name: "N9_regex_39k", answer: worstRegex, status: data.Working, tools: 1,
			problems: []string{"re input_schema " + tooLarge + " (39000 bytes; at most 4096)"}},
		{name: "N9_regex_39k_x3", answer: worstRegex3, status: data.Working, tools: 3,
			problems: []string{"re1 input_schema " + tooLarge, "re2 input_schema " + tooLarge, "re3 input_schema " + tooLarge}},
		{name: "N9_patternProperties_27k", answer: worstPatProps, status: data.Working, tools: 1,
			problems: []string{"pp input_schema " + tooLarge + " (27001 bytes; at most 4096)"}},
		{name: "N10_130k_tools_10_pages", answer: worstManyTools, status: data.Working, tools: 130_000,
			problems: []string{" lint_budget lint budget: 129000 tools not checked (schemas validated: at most 1000 tools)"}},
		{name: "N9_refs_8000", answer: worstRefs, status: data.Working, tools: 1,
			problems: []string{"refs input_schema more than 2000 objects: not validated"}},
		{name: "N10_objects_11x2000", answer: worstObjects, status: data.Working, tools: 11,
			problems: []string{" lint_budget lint budget: 6 tools not checked (schemas validated: at most 1048576 bytes and 10000 objects)"}},
		{name: "N9_deep_1000", answer: worstDeep, status: data.Failing,
			detail: "protocol error: tools/list answer nests deeper than 1000 levels: the MCP SDK cannot read it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFlowServer(t, worstMux(t, tc.answer), serverOpts{})
			// The production deadline: ten pages of 13,000 tools take
			// seconds under the race detector. A clock that stands still:
			// the lint's time is TestToolLintBudget's, so that a loaded
			// machine cannot change which budget ends these lints.
			start := time.Now()
			still := func(c *Config) { c.Now = func() time.Time { return start } }
			res, rec := newTestChecker(t, srv.Lab, data.CheckTimeout, still).Check(context.Background(), srv.target())
			n := 1
			if tc.answer == worstManyTools {
				n = worstPages
			}
			srv.rec.wantSequence(t, pages(n)...)
			if res.Status != tc.status || tc.detail != "" && res.Detail != tc.detail {
				t.Fatalf("concluded %s %q, want %s %q; transcript:\n%s", res.Status, res.Detail, tc.status, tc.detail, transcriptText(rec))
			}
			if res.ToolCount != tc.tools {
				t.Errorf("%d tools, want %d", res.ToolCount, tc.tools)
			}
			var got []string
			for _, p := range res.ToolProblems {
				got = append(got, p.Tool+" "+p.Rule+" "+p.Message)
			}
			if len(got) != len(tc.problems) {
				t.Fatalf("problems\n  %q\nwant\n  %q", got, tc.problems)
			}
			for i, w := range tc.problems {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d is %q, want %q...", i, got[i], w)
				}
			}
		})
	}
}

// decodeTools reads a worst answer (a tools/list result, or a tools array)
// as the lint sees it.
func decodeTools(tb testing.TB, b []byte) []listedTool {
	tb.Helper()
	var res struct {
		Tools []struct {
			Name         string `json:"name"`
			Description  string `json:"description"`
			InputSchema  any    `json:"inputSchema"`
			OutputSchema any    `json:"outputSchema"`
		} `json:"tools"`
	}
	if bytes.HasPrefix(b, []byte("[")) {
		b = append(append([]byte(`{"tools":`), b...), '}')
	}
	if err := json.Unmarshal(b, &res); err != nil {
		tb.Fatal(err)
	}
	out := make([]listedTool, 0, len(res.Tools))
	for _, t := range res.Tools {
		out = append(out, listedTool{name: t.Name, description: t.Description, input: t.InputSchema, output: t.OutputSchema})
	}
	return out
}

// TestToolLintWork bounds the lint's own work on the worst answers:
// patterns compiled and bytes allocated by the lint
// alone. It is not parallel, so that the heap's counter is its own.
func TestToolLintWork(t *testing.T) {
	pattern := func(p string) listedTool {
		return listedTool{name: "p", description: "d", input: map[string]any{"type": "object",
			"properties": map[string]any{"q": map[string]any{"type": "string", "pattern": p}}}}
	}
	for _, tc := range []struct {
		name     string
		tools    []listedTool
		compiles int
		maxAlloc uint64 // bytes
	}{
		{name: "N9_regex_39k", tools: decodeTools(t, mustWorst(t, worstRegex)), maxAlloc: 1 << 20},
		{name: "N9_regex_39k_x3", tools: decodeTools(t, mustWorst(t, worstRegex3)), maxAlloc: 1 << 20},
		{name: "N9_patternProperties_27k", tools: decodeTools(t, mustWorst(t, worstPatProps)), maxAlloc: 1 << 20},
		{name: "N9_short_pattern_expanding_past_the_bound", tools: []listedTool{pattern(`(?:\pL{1000}){20}`)}, maxAlloc: 1 << 20},
		{name: "N9_each_pattern_compiled_once", tools: []listedTool{pattern(`^[a-z]+$`), pattern(`^[a-z]+$`), pattern(`^\d{3}$`)}, compiles: 2, maxAlloc: 1 << 20},
		{name: "N10_13k_tools", tools: decodeTools(t, mustWorst(t, worstManyTools)), maxAlloc: 32 << 20},
		{name: "N9_refs_8000", tools: decodeTools(t, mustWorst(t, worstRefs)), maxAlloc: 2 << 20},
		{name: "N10_objects_11x2000", tools: decodeTools(t, mustWorst(t, worstObjects)), maxAlloc: 128 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLinter(time.Now)
			before := heapAllocs()
			l.add(context.Background(), tc.tools)
			_ = l.result()
			if got := heapAllocs() - before; got > tc.maxAlloc {
				t.Errorf("the lint allocated %d bytes, want at most %d", got, tc.maxAlloc)
			}
			if l.engine.compiles != tc.compiles {
				t.Errorf("%d patterns compiled, want %d", l.engine.compiles, tc.compiles)
			}
		})
	}
}

// heapAllocs is the bytes the process allocated on the heap so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestToolLintBudget proves each budget of the lint:
// past it the remaining schemas are not validated, and the last problem
// says how many tools were left and why; a ctx that is done or a clock past
// the lint's time stops it as the check's deadline would (rule N10).
func TestToolLintBudget(t *testing.T) {
	t.Parallel()
	tools := func(n int, schema func(i int) any) []listedTool {
		out := make([]listedTool, n)
		for i := range out {
			out[i] = listedTool{name: fmt.Sprintf("t%d", i), description: "d", input: schema(i)}
		}
		return out
	}
	plain := func(int) any { return map[string]any{"type": "object"} }
	silent := func(n int) []listedTool { // no description: a problem each
		out := make([]listedTool, n)
		for i := range out {
			out[i] = listedTool{name: fmt.Sprintf("s%d", i), input: plain(i)}
		}
		return out
	}
	invalid := func(int) any { return map[string]any{"type": "object", "required": "x"} }
	big := func(i int) any {
		if i == 2 {
			return map[string]any{"type": "object"}
		}
		return map[string]any{"type": "object", "description": strings.Repeat("x", 700<<10)}
	}
	objects := func(n int) func(int) any { // n objects, one schema shared by every tool
		defs := map[string]any{}
		for i := range n - 2 {
			defs[fmt.Sprint(i)] = map[string]any{"type": "string"}
		}
		schema := map[string]any{"type": "object", "$defs": defs}
		return func(int) any { return schema }
	}
	patterns := func(i int) any {
		return map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "pattern": fmt.Sprintf(`^.{%d,1000}$`, i)}}}
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		now      func() time.Time
		tools    []listedTool
		problems int    // problems before the budget's
		budget   string // the budget's message, "" for none
	}{
		{name: "N10_within_the_budget", tools: tools(1000, plain)},
		{name: "N10_tools", tools: tools(1003, plain), budget: "lint budget: 3 tools not checked (schemas validated: at most 1000 tools)"},
		{name: "N10_bytes", tools: tools(3, big), budget: "lint budget: 1 tool not checked (schemas validated: at most 1048576 bytes and 10000 objects)"},
		{name: "N10_objects", tools: tools(11, objects(1999)), budget: "lint budget: 6 tools not checked (schemas validated: at most 1048576 bytes and 10000 objects)"},
		{name: "N9_objects_of_one_schema", tools: tools(11, objects(2001)), problems: 11},
		{name: "N10_pattern_instructions", tools: tools(100, patterns), budget: "lint budget: 67 tools not checked (schemas validated: patterns of at most about 100000 instructions)"},
		{name: "N10_context_done", ctx: done, tools: tools(5, plain), budget: "lint budget: 5 tools not checked (schemas validated: out of time, at most 1s)"},
		{name: "N10_time", now: func() func() time.Time {
			n := 0 // each reading 0.4 s later: the third tool is past the lint's second
			return func() time.Time { n++; return t0.Add(time.Duration(n) * lintMaxTime * 2 / 5) }
		}(), tools: tools(5, invalid), problems: 2, budget: "lint budget: 3 tools not checked (schemas validated: out of time, at most 1s)"},
		{name: "N10_room_for_the_budget_problem", tools: append(tools(1003, plain), silent(200)...), problems: 99,
			budget: "lint budget: 203 tools not checked (schemas validated: at most 1000 tools)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := func() time.Time { return t0 } // the lint's time, unless the case runs a clock
			if tc.now != nil {
				now = tc.now
			}
			l := newLinter(now)
			l.add(cmp.Or(tc.ctx, context.Background()), tc.tools)
			got := l.result()
			want := tc.problems
			if tc.budget != "" {
				want++
			}
			if len(got) != want {
				t.Fatalf("%d problems, want %d: %+v", len(got), want, got)
			}
			if tc.budget == "" {
				return
			}
			last := got[len(got)-1]
			if last.Rule != data.ToolRuleBudget || last.Tool != "" || !strings.HasPrefix(last.Message, tc.budget) {
				t.Errorf("last problem %+v, want rule %s and %q", last, data.ToolRuleBudget, tc.budget)
			}
		})
	}
}

// TestToolsHeaderFilter proves that the check lists what the SDK's own
// filter lets through, in the server's order, though only the tools with an
// x-mcp-header go through that filter (holdTools): a tool whose annotation
// is invalid is dropped, on any page, the others kept.
func TestToolsHeaderFilter(t *testing.T) {
	t.Parallel()
	plain := map[string]any{"type": "object"}
	header := func(typ, name string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{"p": map[string]any{"type": typ, "x-mcp-header": name}}}
	}
	pages := [][]map[string]any{
		{
			{"name": "a", "description": "d", "inputSchema": plain},
			{"name": "bad_type", "description": "d", "inputSchema": header("object", "X-Obj")},
			{"name": "good", "description": "d", "inputSchema": header("string", "X-Region")},
			{"name": "bad_name", "description": "d", "inputSchema": header("string", "no spaces")},
			{"name": "b", "description": "d", "inputSchema": map[string]any{"type": "object", "$defs": map[string]any{"x-mcp-header": 1}}},
		},
		{
			{"name": "bad_nested", "description": "d", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"o": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "x-mcp-header": ""}}}}}},
			{"name": "c", "description": "d", "inputSchema": plain},
		},
	}
	mux := legacyMux("2025-06-18")
	mux["tools/list"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
		if strings.Contains(string(m.Params), `"cursor":"2"`) {
			writeResult(w, m.ID, map[string]any{"tools": pages[1]})
			return
		}
		writeResult(w, m.ID, map[string]any{"tools": pages[0], "nextCursor": "2"})
	}
	srv := startFlowServer(t, mux, serverOpts{})
	res, rec := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
	if res.Status != data.Working {
		t.Fatalf("concluded %s %q; transcript:\n%s", res.Status, res.Detail, transcriptText(rec))
	}
	srv.rec.wantSequence(t, "POST server/discover", "POST initialize", "POST notifications/initialized", "POST tools/list", "POST tools/list")
	if want := []string{"a", "good", "b", "c"}; !slices.Equal(res.Tools, want) {
		t.Errorf("tools %q, want %q", res.Tools, want)
	}
}

// TestToolLintBudget_own_time proves the lint's time counts its own work
// only: the seconds a server takes between its pages
// are the check's deadline's (rule N10), not the lint's.
func TestToolLintBudget_own_time(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	l := newLinter(func() time.Time { return now })
	page := func(p int) []listedTool {
		return []listedTool{{name: fmt.Sprint("t", p), description: "d", input: map[string]any{"type": "object", "required": "x"}}}
	}
	for p := range 3 {
		l.add(context.Background(), page(p))
		now = now.Add(30 * time.Second) // the next page comes slowly
	}
	got := l.result()
	if len(got) != 3 || slices.ContainsFunc(got, func(p data.ToolProblem) bool { return p.Rule == data.ToolRuleBudget }) {
		t.Errorf("problems %+v, want the three invalid schemas and no budget", got)
	}
}
