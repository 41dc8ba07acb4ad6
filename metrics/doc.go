// Package metrics writes what a run or a publish did in the Prometheus text
// exposition format, to a file for node_exporter's textfile collector (the
// convention for batch jobs such as a cron minute): the last success time,
// the checks by status and by why they were planned, start lateness
// quantiles, deferred checks and the oldest deferral, hosts at their caps,
// fold and step durations, and the prober's version.
//
// It alone imports the Prometheus client library (prometheus/client_golang
// and its text format, prometheus/common/expfmt): the commands call it
// after a step, and nothing that checks a server links it.
//
// Each file is replaced atomically (prometheus.WriteToTextfile: a temporary
// file beside it, then a rename), so the collector never reads half of one.
// A failed step still writes its file, with success 0 and the last success
// time carried over from the file it replaces.
package metrics
