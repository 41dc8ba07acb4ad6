package check

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"plug.directory/prober/data"
)

// TestToolLint proves issue 19 point 4 against a server whose tools break
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
