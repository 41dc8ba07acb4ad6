// Package data holds the prober's domain types (Server, PlannedCheck, Result,
// State), the published facts of the checks page (policy.go), and their storage
// on disk: the ranked list, the paused list, plan files, the result journal, the
// per-server state and the Parquet history.
//
// Every other package of the prober depends on data; data depends on none of
// them. It is the only package that imports parquet-go.
package data
