// Package check runs one check of one MCP server: it asks the server what it
// is and lists its tools, keeping every promise of the checks page (rules
// N1-N11 of SPEC.md), and concludes one outcome of table O with a short human
// reason.
//
// Two halves live here. The guard (guard.go, dial.go, wire.go, addr.go,
// redirect.go, limit.go, lab.go, with record.go for what it records and
// rpcscan.go for its reading of JSON-RPC bodies) is the http.RoundTripper,
// dialer and connection every byte of a check crosses: it enforces N1-N11
// whatever the MCP library or net/http below it tries (wire.go counts and
// caps at the connection, HTTP/1.1 only), and records what it saw. The flows (check.go, session.go, discover.go, initialize.go,
// sse.go) drive github.com/modelcontextprotocol/go-sdk through the
// guard's client following rule N4, on one connection per check where the
// server allows it:
//
//   - era unknown: server/discover first; the SDK falls back to initialize
//     (2025-11-25) when the server does not know it; when the initialize POST
//     is answered 400, 404 or 405 without a modern error code, the legacy
//     HTTP+SSE transport is tried (GET, then posts to the endpoint it names),
//     as the MCP specification's backwards-compatibility section says;
//   - protocol 2026-07-28 or later: server/discover, tools/list;
//   - an earlier protocol: initialize, notifications/initialized, tools/list;
//   - legacy HTTP+SSE: one GET, then initialize, notifications/initialized
//     and tools/list posted to the stream's endpoint.
//
// What was learned (protocol, transport) goes into the result so later checks
// go straight to the right flow: flow.go picks it. conninfo.go keeps, for
// the transcript only, the address each connection dialled and its TLS
// session. classify.go turns the guard's record and the
// flows' typed findings into the outcome; it never reads error strings.
// transcript.go prints the record for people (the one-off command).
// toollint.go lints the listed tool definitions (names, duplicates,
// descriptions, schemas against their meta-schema) into advice that never
// changes the outcome.
//
// A failing server is data, not a Go error: [Checker.Check] always returns a
// full data.Result and the transcript of the exchanges.
package check
