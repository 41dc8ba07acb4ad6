// Package data is the prober's domain: the types every package passes
// around (Server, PlannedCheck, Result and its Stamp, State, Outcome), the
// published facts of the checks page (policy.go), the bounds of what is
// recorded (bound.go), addresses and their one spelling (address.go), the
// stable hash of slots (hash.go), the details an outcome is given
// (detail.go), timings, TLS facts and the problems of tool definitions.
//
// Storage is not here. As litestream keeps its domain in its root package
// and each replica backend in a package of its own, each format the prober
// stores lives in a package named for it, and every one of them imports
// data, never the reverse:
//
//   - data/lists: the two lists a person edits (the ranked servers list, the
//     paused list), their guard against a list that shrank, the notice of bad
//     rows, and the record of pause changes;
//   - data/spool: the files a minute passes along (plan files, result
//     journals, the planner's ledger, the minute markers, stored tool
//     definitions);
//   - data/history: the Parquet history, its compaction, second copy and
//     scrub, and the per-server state derived from it (the only importer of
//     parquet-go);
//   - internal/durable: the file plumbing the stores and the site share
//     (atomic replacement, locks, damaged files set aside, the checksummed
//     binary codec and checksummed lines).
//
// data itself depends on no package of the prober.
package data
