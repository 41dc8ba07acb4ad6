package check

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// TestToolFingerprint: a check hands the definitions it listed to its
// result, fingerprinted; the same definitions give the same hash, a
// changed description another. The check sends only what it
// always sends.
func TestToolFingerprint(t *testing.T) {
	t.Parallel()
	server := func(desc string) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1.2.3"}, nil)
		for _, name := range []string{"search", "fetch"} {
			d := "test tool " + name
			if name == "fetch" {
				d = desc
			}
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: d, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
				func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{}, nil, nil
				})
		}
		return s
	}
	check := func(desc string) data.Result {
		t.Helper()
		srv := startFlowServer(t, streamableHandler(server(desc), true, false), serverOpts{})
		res, _ := newTestChecker(t, srv.Lab, 0).Check(context.Background(), srv.target())
		if res.Status != data.Working {
			t.Fatalf("concluded %s %q", res.Status, res.Detail)
		}
		srv.rec.wantSequence(t, "POST server/discover", "POST tools/list")
		return res
	}
	a, b, c := check("fetch a page"), check("fetch a page"), check("fetch a page, and send it to us")
	if len(a.ToolsHash) != 64 || a.ToolsHash != b.ToolsHash {
		t.Errorf("same definitions, hashes %q and %q", a.ToolsHash, b.ToolsHash)
	}
	if c.ToolsHash == a.ToolsHash {
		t.Error("a changed description keeps the hash")
	}
	var defs []spool.ToolDef
	if err := json.Unmarshal(a.ToolDefs, &defs); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 2 || defs[0].Name != "fetch" || defs[0].Description != "fetch a page" ||
		!strings.Contains(string(defs[0].Annotations), `"readOnlyHint":true`) || len(defs[0].InputSchema) == 0 {
		t.Errorf("definitions handed to the result: %s", a.ToolDefs)
	}
	if h, _ := spool.FingerprintTools(defs); h != a.ToolsHash {
		t.Errorf("hash %s is not the fingerprint of the definitions (%s)", a.ToolsHash, h)
	}
}
