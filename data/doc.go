// Package data holds the prober's domain types (Server, PlannedCheck, Result,
// State), the published facts of the checks page (policy.go), and their storage
// on disk: the ranked list, the paused list, plan files, the result journal, the
// per-server state and the Parquet history.
//
// The prober's own binary files (state, ledger, the site's record) share
// one codec (codec.go); files found damaged are set aside (damaged.go), and
// the state, derived from the history, is rebuilt from it (staterebuild.go).
// Every file is replaced atomically (atomic.go).
//
// Every other package of the prober depends on data; data depends on none of
// them. It is the only package that imports parquet-go.
package data
