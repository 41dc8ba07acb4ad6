package site

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestToolProblemsPublished proves the tool lint on the site: the tool
// problems of a working check are in its server file and on its page, the
// status stays working, and a rebuild from the Parquet history gives them
// again.
func TestToolProblemsPublished(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	r := result(srvWorking, fixNow.Add(-10*time.Minute), data.Working, "")
	r.ToolProblems = []data.ToolProblem{
		{Tool: "bad name!", Rule: data.ToolRuleName, Message: `name has "!" at byte 8; only A-Z a-z 0-9 _ - . are allowed`},
		{Tool: "search", Rule: data.ToolRuleNoDescription, Message: "no description: a model cannot tell when to use it"},
	}
	f.results(r)
	f.fold()
	f.MustPublish()
	got := readServerFile(t, f, "alpha")
	if got.Status != data.Working || got.LastResult == nil || !reflect.DeepEqual(got.LastResult.ToolProblems, r.ToolProblems) {
		t.Fatalf("alpha: %s, last result %+v; want working with the problems %+v", got.Status, got.LastResult, r.ToolProblems)
	}
	page, err := os.ReadFile(filepath.Join(f.out, "servers", "alpha.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "2 problems that clients reject or mishandle") || !strings.Contains(string(page), "<code>bad name!</code> (name)") {
		t.Error("the page does not mention the tool problems")
	}
	if bravo := readServerFile(t, f, "bravo"); bravo.LastResult.ToolProblems != nil {
		t.Errorf("bravo needs a key, listed no tools: tool_problems %v, want null", bravo.LastResult.ToolProblems)
	}
	for _, dir := range []string{filepath.Join(f.dir, "site"), f.out} {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	if st := f.MustPublish(); !st.Rebuilt {
		t.Fatal("not a rebuild")
	}
	if re := readServerFile(t, f, "alpha"); !reflect.DeepEqual(re.LastResult.ToolProblems, r.ToolProblems) {
		t.Errorf("after a rebuild from the history: %+v, want %+v", re.LastResult.ToolProblems, r.ToolProblems)
	}
}
