package main

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/planner"
	"plug.directory/prober/runner/fleet"
)

// member is one server of the demo's ranked list.
type member struct {
	name   string      // readable part of the id
	spec   *fleet.Spec // the fleet server behind it; nil: listed without an address
	second int         // second of the demo minute its slot falls on (rule S2)
	paused bool        // on the paused list (rule S8)
	late   bool        // listed only after the minute was planned: not checked yet
	want   data.Outcome
	why    string // what it shows, for the summary
}

// members returns the demo's servers in rank order. Their fleet specs have
// no id yet: ids depend on the minute (see slotID).
func members() []member {
	spec := func(host, path string, k fleet.Kind, tools ...string) *fleet.Spec {
		return &fleet.Spec{Host: host, Path: path, Kind: k, Tools: tools}
	}
	docs := spec("docs.demo.test", "/mcp", fleet.Modern, "search_docs", "get_page")
	docs.Title, docs.Description, docs.Website = "Demo Docs", "Searches the demo's documentation and reads its pages.", "https://docs.demo.test/about"
	return []member{
		{name: "docs", second: 0, spec: docs, want: data.Working, why: "2026-07-28: server/discover, tools/list; says its title, description and website"},
		{name: "issues", second: 1, spec: spec("issues.demo.test", "/mcp", fleet.Streamable, "create_issue", "list_issues", "add_comment"),
			want: data.Working, why: "2025-11-25: initialize handshake"},
		{name: "weather", second: 2, spec: spec("weather.demo.test", "/sse", fleet.LegacySSE, "forecast"),
			want: data.Working, why: "2024-11-05: legacy HTTP+SSE"},
		{name: "notes", second: 0, spec: spec("tools.demo.test", "/notes/mcp", fleet.Modern, "add_note", "find_notes"),
			want: data.Working, why: "one host, three servers: 1 s apart (S3)"},
		{name: "calendar", second: 0, spec: spec("tools.demo.test", "/calendar/mcp", fleet.Streamable, "list_events"),
			want: data.Working, why: "one host, three servers: 1 s apart (S3)"},
		{name: "files", second: 0, spec: spec("tools.demo.test", "/files/mcp", fleet.LegacySSE, "read_file", "list_dir"),
			want: data.Working, why: "one host, three servers: 1 s apart (S3)"},
		{name: "crm", second: 3, spec: spec("crm.demo.test", "/mcp", fleet.NeedsKey),
			want: data.NeedsKey, why: "401 with an OAuth resource_metadata challenge"},
		{name: "search", second: 3, spec: spec("search.demo.test", "/mcp", fleet.RateLimited),
			want: data.Refused, why: "429 with Retry-After"},
		{name: "billing", second: 4, spec: spec("billing.demo.test", "/mcp", fleet.Broken),
			want: data.Failing, why: "HTTP 500"},
		{name: "reports", second: 0, spec: spec("reports.demo.test", "/mcp", fleet.Slow),
			want: data.Failing, why: "never answers: the check gives up"},
		{name: "desktop", second: 5, want: data.NotCheckable, why: "listed without an address"},
		{name: "archive", second: 1, spec: spec("archive.demo.test", "/mcp", fleet.Modern, "search_archive"), paused: true,
			want: data.Paused, why: "on the paused list: never contacted"},
		{name: "fresh", spec: spec("fresh.demo.test", "/mcp", fleet.Modern, "hello"), late: true,
			want: data.Pending, why: "listed after the plan was made"},
	}
}

// slotID returns the first id name-N (N = 1, 2, ...) whose hourly slot
// (rule S2: planner.SlotOf, the second of the hour of an hourly server)
// falls on the given second of minute.
func slotID(name string, minute time.Time, second int) string {
	want := (minute.Unix()%3600 + int64(second)) % 3600
	for n := 1; ; n++ {
		id := fmt.Sprintf("%s-%d", name, n)
		if int64(planner.SlotOf(id)/time.Second)%3600 == want {
			return id
		}
	}
}

// listing is the demo's lists for one minute.
type listing struct {
	members []member
	ids     []string // by member
}

// newListing names every member for minute: servers checked in the minute
// get an id whose slot falls on their second; the late one gets an id
// whose slot is half an hour away, so only being listed after the plan
// keeps it out of the minute, not its slot.
func newListing(ms []member, minute time.Time) listing {
	l := listing{members: ms}
	for _, m := range ms {
		second := m.second
		if m.late {
			second = 30 * 60
		}
		l.ids = append(l.ids, slotID(m.name, minute, second))
	}
	return l
}

// specs returns the fleet specs of the members that have an address.
func (l listing) specs() []fleet.Spec {
	var out []fleet.Spec
	for i, m := range l.members {
		if m.spec != nil {
			s := *m.spec
			s.ID = l.ids[i]
			out = append(out, s)
		}
	}
	return out
}

// servers returns the ranked list as of now: every member but the late ones
// when withLate is false. Ranks follow the members' order, all within the
// hourly tier (rule S1).
func (l listing) servers(now time.Time, withLate bool) []data.Server {
	var out []data.Server
	for i, m := range l.members {
		if m.late && !withLate {
			continue
		}
		s := data.Server{ID: l.ids[i], Rank: i + 1, Added: now.UTC().Truncate(time.Second)}
		if m.spec != nil {
			s.URL = m.spec.URL()
		}
		out = append(out, s)
	}
	return out
}

// rankedCSV returns the ranked list as CSV.
func (l listing) rankedCSV(now time.Time, withLate bool) ([]byte, error) {
	var b bytes.Buffer
	if err := lists.WriteServers(&b, l.servers(now, withLate)); err != nil {
		return nil, fmt.Errorf("write ranked list: %w", err)
	}
	return b.Bytes(), nil
}

// pausedText returns the paused list (rule R1): one id a line.
func (l listing) pausedText() []byte {
	var b strings.Builder
	b.WriteString("# Servers whose owners asked us to stop checking them (rule R1).\n")
	for i, m := range l.members {
		if m.paused {
			fmt.Fprintf(&b, "%s # owner's request, demo\n", l.ids[i])
		}
	}
	return []byte(b.String())
}
