// Package site publishes what the prober found as static files for the
// plug.directory site build (rules P1-P4): one JSON file per server
// (servers/<id>.json), an index of all servers (index.json), the facts of the
// checks page (probe.json) and the page itself rendered from them
// (checks.txt, checks.html) with the operator's contact (Config.Contact),
// four shields.io badges per server (status, 30-day uptime, latency,
// certificate: badges/, badges-uptime/, badges-latency/,
// badges-certificate/), its 90-day strip as an SVG that stands alone
// (badges-strip/<id>.svg, for a README), Atom feeds of status changes (feed.atom, feeds/<id>.atom), and a small HTML
// preview (index.html, servers/<id>.html) rendered only from the published
// JSON. A value that does not apply is null, never "" or 0 (record/null.go). A
// server's file carries its 90-day daily series, its status
// changes (incidents) for a year and the changes of its tool definitions,
// each carried forward from the file before and derived from the checks
// that are new, so an incremental run reads no old history and a rebuild
// from the Parquet history gives the same.
//
// Publishing is incremental. The package keeps a compact record of its own
// under DATA/site: state.bin (one row per server plus which journals and
// Parquet parts were already folded in) and servers/<id>.json (each
// server's checks of the last 30 days). A run reads only the results it has
// not seen, re-renders only the servers they, the ranked list, the paused
// list or the plans touch, and rewrites only files whose bytes changed, each
// atomically (rule P3). Folding a result in twice changes nothing, so
// overlapping or interrupted runs are harmless.
//
// Where things are: this package is the publish pass and its store.
// publish.go runs one publication (Config, Publish, its steps in order);
// inputs.go reads what changed (the lists, the planner's ledger, journals
// and Parquet parts, a server's published record); output.go folds each
// server's new results into its record and writes the files of each server
// and the shared ones; index.go encodes the index from the store's rows;
// store.go and storedelta.go are the site's record between runs. What a
// server's file says is computed in site/record, with no I/O; each output
// is made by a package of its own from those values: site/pages (HTML),
// site/strip (SVG), site/feed (Atom), site/badge and site/checks (the
// checks page).
//
// Only this package writes the public JSON.
package site
