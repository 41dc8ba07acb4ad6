package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"plug.directory/prober/internal/testutil"
)

// The worst tools/list answers a hostile server can give under the 1 MB of
// rule N9, each kept under testdata/worst as the server
// sends it; TestWorstAnswers_testdata proves the files are what
// worstAnswers builds, and -update rewrites them.

// Names of the worst answers, files under testdata/worst.
const (
	worstRegex     = "regex-39k.json"             // one tool whose inputSchema.pattern is a 39 KB regex
	worstRegex3    = "regex-39k-x3.json"          // three such tools
	worstPatProps  = "patternproperties-27k.json" // a 27 KB patternProperties key
	worstDeep      = "deep-1000.json"             // an inputSchema nested 1,000 deep
	worstManyTools = "tools-13k-page.json"        // 13,000 tools: one of the 10 pages of 130,000
	worstRefs      = "refs-8000.json"             // one inputSchema of 8,000 $defs referring to each other
	worstObjects   = "objects-11x2000.json"       // 11 tools of 1,999 objects each: past the lint's objects
)

// worstPages is how many pages the worstManyTools server answers.
const worstPages = 10

// hugePattern is the regex unit that costs Go's regexp the most per byte:
// every \pL{1000} compiles to a thousand instructions over ~700 ranges.
const hugePattern = `(?:\pL{1000})`

// worstAnswers builds each worst answer: a tools/list result (the
// worstManyTools one a tools array whose names start with "p0").
func worstAnswers() map[string][]byte {
	regexTool := func(name string) map[string]any {
		return map[string]any{"name": name, "description": "d", "inputSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"q": map[string]any{"type": "string", "pattern": strings.Repeat(hugePattern, 3000)}},
		}}
	}
	deep := map[string]any{"type": "object"}
	for range 999 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"x": deep}}
	}
	many := make([]map[string]any, 13000)
	for i := range many {
		many[i] = map[string]any{"name": fmt.Sprintf("p0t%05d", i), "description": "d", "inputSchema": map[string]any{"type": "object"}}
	}
	defs := map[string]any{}
	for i := range 8000 {
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"allOf": []any{
			map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", (i+1)%8000)},
			map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", (i*7+3)%8000)},
		}}
	}
	props := map[string]any{}
	for i := range 1998 {
		props[fmt.Sprintf("p%d", i)] = map[string]any{"type": "string"}
	}
	objects := make([]map[string]any, 11)
	for i := range objects {
		objects[i] = map[string]any{"name": fmt.Sprintf("o%d", i), "description": "d", "inputSchema": map[string]any{"type": "object", "properties": props}}
	}
	result := func(tools ...map[string]any) any { return map[string]any{"tools": tools} }
	answers := map[string]any{
		worstRegex:  result(regexTool("re")),
		worstRegex3: result(regexTool("re1"), regexTool("re2"), regexTool("re3")),
		worstPatProps: result(map[string]any{"name": "pp", "description": "d", "inputSchema": map[string]any{
			"type":              "object",
			"patternProperties": map[string]any{strings.Repeat(hugePattern, 2077): map[string]any{"type": "string"}},
		}}),
		worstDeep:      result(map[string]any{"name": "deep", "description": "d", "inputSchema": deep}),
		worstManyTools: many,
		worstRefs:      result(map[string]any{"name": "refs", "description": "d", "inputSchema": map[string]any{"type": "object", "$defs": defs, "$ref": "#/$defs/d0"}}),
		worstObjects:   result(objects...),
	}
	out := map[string][]byte{}
	for name, v := range answers {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // maps of strings: cannot fail
		}
		out[name] = b
	}
	return out
}

// TestWorstAnswers_testdata proves the worst answers under testdata/worst
// are what worstAnswers builds and each fits one answer of rule N9 (the
// many-tools page with its result wrapper and a page number).
func TestWorstAnswers_testdata(t *testing.T) {
	t.Parallel()
	for name, b := range worstAnswers() {
		testutil.Golden(t, "testdata/worst/"+name, b)
		if len(b) >= 1<<20-100 {
			t.Errorf("%s is %d bytes: not under 1 MB", name, len(b))
		}
	}
}

// mustWorst reads a worst answer from testdata/worst.
func mustWorst(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/worst/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// worstMux is a raw 2025-06-18 server (no server/discover) whose tools/list
// answers the worst answer name; for worstManyTools it answers
// worstPages pages, page k's names starting with "pk", each but the last
// with a cursor to the next.
func worstMux(tb testing.TB, name string) rpcMux {
	tb.Helper()
	body := mustWorst(tb, name)
	mux := legacyMux("2025-06-18")
	mux["tools/list"] = func(w http.ResponseWriter, _ *http.Request, m rpcRequest) {
		if name != worstManyTools {
			writeRaw(w, m.ID, body)
			return
		}
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(m.Params, &p)
		page, _ := strconv.Atoi(p.Cursor)
		tools := bytes.ReplaceAll(body, []byte(`"p0t`), []byte(`"p`+strconv.Itoa(page)+`t`))
		res := append([]byte(`{"tools":`), tools...)
		if page+1 < worstPages {
			res = append(res, `,"nextCursor":"`+strconv.Itoa(page+1)+`"`...)
		}
		writeRaw(w, m.ID, append(res, '}'))
	}
	return mux
}

// writeRaw writes a JSON-RPC answer whose result is the raw JSON result.
func writeRaw(w http.ResponseWriter, id json.RawMessage, result []byte) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}
