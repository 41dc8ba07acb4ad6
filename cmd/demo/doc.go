// Command demo runs the whole pipeline on a local fleet of real MCP
// servers, as `make demo` does: it starts the fleet (runner/fleet), writes a
// ranked list and a paused list for it, then runs the built plan, run and
// publish commands in the lab setting for the next minute, as cron would,
// and prints what each server's page now says and where the HTML preview
// is.
//
//	demo -bin bin -dir demo-out [-timeout 10s]
//
// The fleet covers every status of table O: servers of the three eras that
// work, one that needs a key, one that refuses (429), one that fails (500),
// one too slow to answer, one listed without an address, one on the paused
// list and one listed only after the minute was planned, plus three
// servers on one host so the host spacing of rule S3 shows.
//
// The planner checks a server at its own slot, a second of the hour fixed
// by a hash of its id (rule S2), and servers listed at its very first plan
// wait for their slot. The demo therefore names its servers so that their
// slots fall in the minute it plans: the ids carry a number found by trying
// the planner's own SlotOf.
//
// Everything it starts (the fleet, the commands) stops when it ends, also
// on Ctrl-C. A second run starts afresh: the demo directory is emptied
// first (only a directory the demo made itself, marked by a file).
package main
