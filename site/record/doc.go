// Package record is what a server's record is, as plain values computed
// with no I/O: the shapes of the published JSON (ServerFile, IndexFile,
// Status; files.go, status.go, null.go for the nulls, jsontime.go for the
// times) and their contents, folded from a server's checks. A Summary
// (summary.go) folds the results in and yields, at a given instant, the
// server's file (ServerFileOf, server.go): its state, history and uptime,
// its daily series (daily.go), its incidents and pauses (incidents.go), the
// changes of its tool definitions (tools.go), what its certificate says
// (certificate.go), the protocol it speaks (protocol.go) and where its
// checks' time went (timings.go). A server's published file is its record:
// SummaryOf reads one back, so a publish need not read old history.
//
// The outputs (site/strip, site/feed, site/badge, site/checks, site/pages)
// turn these values into files; the publish pass (package site) reads the
// inputs, folds them in and writes. This package imports neither.
package record
