// Command publish writes the public files of the site from the data
// directory: servers/<id>.json, index.json, probe.json, badges/<id>.json,
// badges-strip/<id>.svg, the checks page and an HTML preview (rules
// P1-P4). Only files whose bytes change are rewritten, each atomically. A
// -data directory that plan or run never wrote to is an error, not an
// empty history.
//
//	publish -data DIR -servers servers.csv [-paused FILE] -out OUT -contact ADDRESS [-no-html] [-at TIME]
//
// -contact is the operator's e-mail address, which the checks page and
// probe.json give owners who want the checks stopped: required, publish
// refuses to run without it (exit 2, naming -contact).
package main
