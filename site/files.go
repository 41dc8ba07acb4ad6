package site

import (
	"time"

	"plug.directory/prober/data"
)

// HistoryLen is how many of a server's latest checks its file lists.
const HistoryLen = 48

// ServerFile is servers/<id>.json: everything the site shows of one server
// (rule P1). Times are RFC 3339 in UTC; a time that does not apply is null.
type ServerFile struct {
	ID     string       `json:"id"`
	URL    string       `json:"url"` // "" for a server that only runs locally
	Rank   int          `json:"rank"`
	Tier   string       `json:"tier"`   // "hourly" or "daily" (rule S1)
	Status data.Outcome `json:"status"` // code of table O, paused and pending included
	Label  string       `json:"label"`  // the exact words of table O
	Reason string       `json:"reason"` // short human reason of the last check; "" when none

	LastCheck      *time.Time `json:"last_check"`                          // start of the last check
	NextCheck      *time.Time `json:"next_check"`                          // next planned start; null when paused or unknown
	NextCheckFrom  string     `json:"next_check_from"`                     // "plan" (a plan file names it), "estimate" (from the rules) or ""
	LastAnswered   *time.Time `json:"last_answered"`                       // start of the last answered check
	FailingSince   *time.Time `json:"failing_since"`                       // start of the first failing check of the current streak
	CadenceSeconds int64      `json:"cadence_seconds"`                     // usual pace of its tier
	EffectiveCad   int64      `json:"effective_cadence_seconds,omitempty"` // pace when its host's caps stretch it
	SharedWith     []string   `json:"shared_with,omitempty"`               // the other servers listed at its address: one check serves all (issue 14)

	LastResult *LastResult `json:"last_result"` // the last check, also while paused (rule P4); null when never checked
	History    []Check     `json:"history"`     // the latest checks, newest first, at most HistoryLen
	Uptime     UptimeSet   `json:"uptime"`
}

// LastResult is what the last check found.
type LastResult struct {
	Status        data.Outcome `json:"status"`
	Label         string       `json:"label"`
	Reason        string       `json:"reason"`
	Started       time.Time    `json:"started"`
	LatencyMS     int64        `json:"latency_ms"`  // whole check, first request to last answer
	HTTPStatus    int          `json:"http_status"` // last HTTP status seen; 0 when none
	Protocol      string       `json:"protocol"`    // protocol version learned; "" when none
	Era           string       `json:"era"`         // "discover", "initialize", "legacy_sse" or ""
	Transport     string       `json:"transport"`   // "streamable-http", "sse" or ""
	ServerName    string       `json:"server_name"`
	ServerVersion string       `json:"server_version"`
	ToolCount     int          `json:"tool_count"`
	Tools         []string     `json:"tools"` // in the server's order
}

// Check is one entry of a server's history.
type Check struct {
	Started   time.Time    `json:"started"`
	Status    data.Outcome `json:"status"`
	Reason    string       `json:"reason,omitempty"`
	LatencyMS int64        `json:"latency_ms"`
}

// UptimeSet is a server's uptime over three windows ending at publication.
type UptimeSet struct {
	Day   Uptime `json:"24h"`
	Week  Uptime `json:"7d"`
	Month Uptime `json:"30d"`
}

// Uptime counts the checks of one window. Only working, needs_key and
// failing count; refused and not_checkable do not count against a server
// (table O).
type Uptime struct {
	Counted  int      `json:"counted"`  // working + needs_key + failing
	Answered int      `json:"answered"` // working + needs_key
	Percent  *float64 `json:"percent"`  // 100 * answered / counted, two decimals; null when nothing counted
}

// Badge is badges/<id>.json in the shields.io endpoint format.
type Badge struct {
	SchemaVersion int    `json:"schemaVersion"` // always 1
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

// BadgeLabel is the left-hand text of every badge.
const BadgeLabel = "MCP check"

var badgeColors = map[data.Outcome]string{
	data.Working:      "brightgreen",
	data.NeedsKey:     "green",
	data.Refused:      "yellow",
	data.NotCheckable: "lightgrey",
	data.Failing:      "red",
	data.Paused:       "inactive",
	data.Pending:      "lightgrey",
}

// BadgeOf returns the badge of a server shown with status o.
func BadgeOf(o data.Outcome) Badge {
	return Badge{SchemaVersion: 1, Label: BadgeLabel, Message: o.Label(), Color: badgeColors[o]}
}

// IndexFile is index.json: one summary row per listed server, sorted by
// rank (ties by id), and the count of servers per status.
type IndexFile struct {
	Servers int           `json:"servers"` // number of rows
	Totals  []StatusTotal `json:"totals"`  // one per outcome of table O, in the site's order
	Rows    []IndexRow    `json:"rows"`
}

// StatusTotal is how many servers the site shows with one status.
type StatusTotal struct {
	Status data.Outcome `json:"status"`
	Label  string       `json:"label"`
	Count  int          `json:"count"`
}

// IndexRow is one server in index.json. Its label is the one of its status
// in Totals.
type IndexRow struct {
	ID        string       `json:"id"`
	Rank      int          `json:"rank"`
	Status    data.Outcome `json:"status"`
	LastCheck *time.Time   `json:"last_check"`
	Uptime7d  *float64     `json:"uptime_7d"` // percent, as in the server's file
	Tools     int          `json:"tools"`     // tool count of the last check
}
