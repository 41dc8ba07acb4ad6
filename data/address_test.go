package data

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestAddressKey: the spellings of one address as the check dials it are
// one key (issue 14 point 5); what the server reads (path, query) and
// another port keep addresses apart.
func TestAddressKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://a.example/mcp", "https://a.example/mcp"},
		{"HTTPS://A.Example/mcp", "https://a.example/mcp"},
		{"https://a.example:443/mcp", "https://a.example/mcp"},
		{"https://a.example./mcp", "https://a.example/mcp"},
		{"https://a.example/mcp#tools", "https://a.example/mcp"},
		{"https://a.example", "https://a.example/"},
		{"https://a.example?x=1", "https://a.example/?x=1"},
		{"https://ｅｘａｍｐｌｅ.com/mcp", "https://example.com/mcp"},
		{"https://bücher.example/mcp", "https://xn--bcher-kva.example/mcp"},
		{"https://a.example:8443/mcp", "https://a.example:8443/mcp"},
		{"https://a.example/MCP?Q=1", "https://a.example/MCP?Q=1"},
		{"https://a.example/mcp/", "https://a.example/mcp/"},
		{"http://a.example:443/mcp", "http://a.example:443/mcp"},
		{"https://u:p@A.example/mcp", "https://u:p@a.example/mcp"},
		{"not a url", "not a url"},
	} {
		if got := AddressKey(c.in); got != c.want {
			t.Errorf("AddressKey(%q) = %q, want %q", c.in, got, c.want)
		}
		if canonicalAddress(c.in) && c.in != c.want {
			t.Errorf("%q taken as its own key, but its key is %q", c.in, c.want)
		}
	}
}

// TestPlanLineShared: a check for MaxShared servers of the longest ids and
// addresses, every byte one JSON escapes to six, fits a plan line and reads
// back whole.
func TestPlanLineShared(t *testing.T) {
	dir := t.TempDir()
	minute := t0.Add(time.Hour)
	long := func(n int) string { return strings.Repeat("<", n) }
	c := PlannedCheck{At: minute, ID: long(MaxIDBytes), URL: "https://a.example/" + long(MaxAddressBytes-18), Host: "a.example",
		Reason: ReasonRoutine, Due: minute, Rank: 1}
	for range MaxShared - 1 {
		c.Also = append(c.Also, Listing{ID: long(MaxIDBytes), URL: c.URL})
	}
	if err := WritePlan(dir, minute, []PlannedCheck{c}); err != nil {
		t.Fatal(err)
	}
	got, bad, err := ReadPlan(dir, minute)
	if err != nil || len(bad) > 0 || len(got) != 1 || len(got[0].Also) != MaxShared-1 {
		t.Fatalf("read back %d checks (bad %v, err %v), want the one with %d others", len(got), bad, err, MaxShared-1)
	}
	b, _ := json.Marshal(c)
	t.Logf("the line takes %d of %d bytes", len(b), MaxPlanLine)
}
