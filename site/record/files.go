package record

import (
	"plug.directory/prober/data"
)

// HistoryLen is how many of a server's latest checks its file lists.
const HistoryLen = 48

// ServerFile is servers/<id>.json: everything the site shows of one server
// (rule P1). Times are RFC 3339 in UTC; a time that does not apply is null.
type ServerFile struct {
	ID     string       `json:"id"`
	URL    *string      `json:"url"` // null for a server that only runs locally
	Rank   int          `json:"rank"`
	Listed *Time        `json:"listed_at"` // when it was added to the ranked list; null when the list does not say
	Tier   string       `json:"tier"`      // "hourly" or "daily" (rule S1)
	Status data.Outcome `json:"status"`    // code of table O, paused and pending included
	Label  string       `json:"label"`     // the exact words of table O
	Detail *string      `json:"reason"`    // the last check's detail (data.Result.Detail), or why no check can reach it; null when none

	LastCheck      *Time    `json:"last_check"`                          // start of the last check
	NextCheck      *Time    `json:"next_check"`                          // next planned start; null when paused or unknown
	NextCheckFrom  *string  `json:"next_check_from"`                     // "plan" (a plan file names it) or "estimate" (from the rules); null with next_check
	LastAnswered   *Time    `json:"last_answered"`                       // start of the last answered check
	FailingSince   *Time    `json:"failing_since"`                       // start of the first failing check of the current streak
	CadenceSeconds int64    `json:"cadence_seconds"`                     // usual pace of its tier
	EffectiveCad   int64    `json:"effective_cadence_seconds,omitempty"` // pace when its host's caps stretch it
	SharedWith     []string `json:"shared_with,omitempty"`               // the other servers listed at its address: one check serves all

	LastResult *LastResult `json:"last_result"` // the last check, also while paused (rule P4); null when never checked
	// Certificate is the one the last check that got as far saw;
	// null when no check did.
	Certificate *Certificate `json:"certificate"`
	// CertWarnings are the warnings its certificates were given, as its
	// feed has them, newest first: kept a year, at most CertWarningsLen,
	// when the certificate changes too.
	CertWarnings []CertWarning   `json:"certificate_warnings"`
	History      History         `json:"history"` // the latest checks, newest first, at most HistoryLen, in columns
	Uptime       UptimeSet       `json:"uptime"`
	LatencyP50   *int64          `json:"latency_p50_ms_30d"` // median latency of the answered checks of the last 30 days; null when none
	Daily        DailySeries     `json:"daily"`              // the DailyLen UTC days ending on the day the file was rendered, oldest first
	Incidents    []Incident      `json:"incidents"`          // its status changes, newest first: at most IncidentsLen, none that ended more than a year ago
	ToolDefs     ToolDefinitions `json:"tool_definitions"`
	Badges       BadgeLinks      `json:"badges"`

	// Protocol is how it spoke to the last check that got through a
	// handshake; null when none did.
	Protocol *Protocol `json:"protocol"`
}

// Day is one UTC day of a server's daily series. Only working, needs_key
// and failing checks count, as in Uptime; latencies are those of the
// answered checks.
type Day struct {
	Date         string     `json:"date"`           // YYYY-MM-DD
	Listed       bool       `json:"listed"`         // false for a day that ended before the server was listed and had no counted check
	Counted      int        `json:"counted"`        // working + needs_key + failing
	Answered     int        `json:"answered"`       // working + needs_key
	Percent      *float64   `json:"percent"`        // 100 * answered / counted, two decimals; null when nothing counted
	LatencyP50MS *int64     `json:"latency_p50_ms"` // median latency of the answered checks; null when none answered
	LatencyP95MS *int64     `json:"latency_p95_ms"` // 95th percentile (nearest rank); null when none answered
	Phases       *DayPhases `json:"phases"`         // where the answered checks' time went, p50 and p95 per phase; null when none answered or none measured
}

// Incident is a span of time during which a server showed one status: it
// starts with the check (or the pause) that changed the status and ends
// where the next one starts.
type Incident struct {
	Status          data.Outcome  `json:"status"`           // code of table O
	Label           string        `json:"label"`            // its exact words
	From            *data.Outcome `json:"from"`             // the status before; null for the first check ever
	Detail          *string       `json:"reason"`           // detail of the check that started it; null for a pause
	Start           Time          `json:"start"`            // start of that check, or the publication that first saw the pause
	End             *Time         `json:"end"`              // start of the next status; null while it lasts
	DurationSeconds *int64        `json:"duration_seconds"` // End - Start; null while it lasts
}

// BadgeLinks names a server's badges and feed, relative to the top of the
// site. The snippets its owner pastes into a README to show them are not
// in its file (`json:"-"`): its page shows them, and a site build makes
// them from the paths and its own address. They were 0.9 KB of every
// server's file, the same words as in its page.
type BadgeLinks struct {
	Status   string `json:"status"`      // badges/<id>.json
	Uptime   string `json:"uptime_30d"`  // badges-uptime/<id>.json
	Latency  string `json:"latency"`     // badges-latency/<id>.json
	Feed     string `json:"feed"`        // feeds/<id>.atom, its status changes as an Atom feed
	Cert     string `json:"certificate"` // badges-certificate/<id>.json
	Markdown string `json:"-"`           // the four badges as shields.io images, each linking to the server's page
	// Strip is badges-strip/<id>.svg, the 90-day strip as an SVG that
	// stands alone (colours inline), and StripMarkdown and StripHTML embed
	// it in a README, linking to the server's page.
	Strip         string `json:"strip"`
	StripMarkdown string `json:"-"`
	StripHTML     string `json:"-"`
}

// LastResult is what the last check found.
type LastResult struct {
	Status        data.Outcome `json:"status"`
	Label         string       `json:"label"`
	Detail        *string      `json:"reason"` // data.Result.Detail; null when none
	Started       Time         `json:"started"`
	LatencyMS     *int64       `json:"latency_ms"`     // whole check, first request to last answer; null when no answer came (timed out, refused connection, DNS failure...)
	HTTPStatus    *int         `json:"http_status"`    // last HTTP status seen; null when none
	Protocol      *string      `json:"protocol"`       // protocol version learned; null when none
	Era           *string      `json:"era"`            // "discover", "initialize" or "legacy_sse"; null when no protocol was learned
	Transport     *string      `json:"transport"`      // "streamable-http" or "sse"; null when none
	ServerName    *string      `json:"server_name"`    // null when the server did not say
	ServerVersion *string      `json:"server_version"` // null when the server did not say
	// What the server says of itself for people: its title, description
	// and website (an https link); each null when it does not say.
	ServerTitle       *string `json:"server_title"`
	ServerDescription *string `json:"server_description"`
	ServerWebsite     *string `json:"server_website"`
	// KeyInfo is where a server that needs a key says to learn how to get
	// one: the OAuth resource metadata its challenge announced (an https
	// link, which names its authorization servers; never fetched); null
	// when it names none.
	KeyInfo   *string  `json:"key_info"`
	ToolCount int      `json:"tool_count"`
	Tools     []string `json:"tools"`   // in the server's order
	Timings   *Timings `json:"timings"` // where its time went; null when it opened no connection
	// ToolProblems is what clients will reject in its tool definitions
	// (advice, the status stays working): tool, rule and
	// message, at most data.MaxToolProblems; [] when the listed tools have
	// none, null when no tools were listed.
	ToolProblems []data.ToolProblem `json:"tool_problems"`

	supportFields // discover_versions, session, answers
}

// Check is one entry of a server's history.
type Check struct {
	Started   Time         `json:"started"`
	Status    data.Outcome `json:"status"`
	Detail    string       `json:"reason,omitempty"`
	LatencyMS *int64       `json:"latency_ms"` // null when no answer came
	Timings   *Phases      `json:"timings"`    // where its time went; null when not measured (no connection, or checked before timings were measured)
}

// UptimeSet is a server's uptime over three windows ending at publication,
// each under a name a template's dot syntax reaches (Hugo's and Go's
// templates cannot say `.uptime.24h`). The old names (`24h`, `7d`, `30d`)
// were written beside them for a release, and are not any more.
type UptimeSet struct {
	Day   Uptime `json:"last_24h"`
	Week  Uptime `json:"last_7d"`
	Month Uptime `json:"last_30d"`
}

// Uptime counts the checks of one window. Only working, needs_key and
// failing count; refused and not_checkable do not count against a server
// (table O).
type Uptime struct {
	Counted  int      `json:"counted"`  // working + needs_key + failing
	Answered int      `json:"answered"` // working + needs_key
	Percent  *float64 `json:"percent"`  // 100 * answered / counted, two decimals; null when nothing counted
}

// IndexFile is index.json, the head of the index: the count of servers
// per status and the parts that hold one summary row per listed server,
// index/<hash>.json, in id order (index.go). Composed (ReadIndex), Rows
// are every part's rows one after the other; the head itself has none.
type IndexFile struct {
	Servers int           `json:"servers"`        // number of rows, in all the parts
	Totals  []StatusTotal `json:"totals"`         // one per outcome of table O, in the site's order
	Rows    []IndexRow    `json:"rows,omitempty"` // composed from the parts (ReadIndex); not in the head
	Parts   []IndexPart   `json:"parts"`          // in id order: each part's ids all sort before the next's

	// Protocols counts the servers by how they last spoke,
	// ToolProblems those whose last working check listed tools
	// that clients will reject; FactsPending the servers in
	// neither count yet (a site record from before them: each is read
	// within the next runs). index.json has them before its parts.
	Protocols    ProtocolTotals `json:"protocols"`
	ToolProblems int            `json:"tool_problems"`
	FactsPending int            `json:"facts_pending"`
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
	LastCheck *Time        `json:"last_check"`
	Uptime7d  *float64     `json:"uptime_7d"` // percent, as in the server's file
	Tools     *int         `json:"tools"`     // tool count of the last check, if it listed them (working); null when unknown
}

// IndexPart is one entry of index.json's parts: where the part is,
// relative to the top of the site, the ids of its first and last rows, its
// number of rows, and the FNV-64a of its bytes (16 hex digits, also its
// name), for a site build to cache it by.
type IndexPart struct {
	Path  string `json:"path"`
	First string `json:"first"`
	Last  string `json:"last"`
	Rows  int    `json:"rows"`
	Hash  string `json:"hash"`
}
