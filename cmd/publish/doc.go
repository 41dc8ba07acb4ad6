// Command publish writes the public files of the site from the data
// directory: servers/<id>.json, index.json, probe.json, badges/<id>.json, the
// checks page and an HTML preview (rules P1-P4). Only files whose bytes
// change are rewritten, each atomically. A -data directory that plan or run
// never wrote to is an error, not an empty history.
//
//	publish -data DIR -servers servers.csv [-paused FILE] -out OUT [-no-html] [-at TIME]
package main
