// Package fleet starts a local fleet of real MCP servers, made with the
// go-sdk, for the demo (cmd/demo) and for tests that run the whole pipeline:
// a 2026-07-28 stateless server answering server/discover, a 2025-11-25
// Streamable HTTP server, a legacy HTTP+SSE (2024-11-05) server, one behind
// a bearer-token gate, and servers that answer 429, answer 500 or never
// answer at all.
//
// Every host of the fleet listens on its own 127.0.0.N:8443 (the check only
// connects to ports 443 and 8443, rule N7), serves TLS with a certificate of
// a CA made when the fleet starts, and is reached under its own hostname by
// the check's lab setting (-lab -resolve host:8443:127.0.0.N -ca-file
// FILE). Servers that share a hostname share its address, as servers on one
// real host share its checks (rule S3).
//
// The package lives under runner because only runner imports the MCP SDK
// and talks to MCP servers; nothing in the production path imports it. It
// listens on loopback only and sends nothing anywhere.
package fleet
