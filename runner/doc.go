// Package runner runs one minute of the plan: it reads the checks the
// planner wrote for that minute, starts each at its planned second and never
// earlier, keeps the 1 s spacing per host on actual start times across every
// run on the machine (rule S9), and journals each result, fsynced, the
// moment its check ends, so that a run killed at any moment loses no
// completed check. At the end it folds the journals into the Parquet history
// and the per-server state (history.Fold) and compacts the history
// (CompactHistory).
//
// The one-server check itself lives in runner/check; this package only sees
// it through the Checker interface, so its scheduling is tested with fakes
// and an injected Clock.
//
// Files under the data directory DIR that the runner owns:
//
//	DIR/run/minutes/YYYY-MM-DDTHHMM.json  one marker per minute run: a minute runs once
//	DIR/run/hosts.txt, DIR/run/hosts.lock  last actual start per host, shared by overlapping runs
//	DIR/run/interrupted.jsonl               checks cancelled at shutdown, kept out of the history
//
// Loop runs plan, run and publish every minute in the foreground with
// robfig/cron, for containers without cron.
package runner
