// Package planner decides which checks start at which second of a minute
// (rules S1-S9 of SPEC.md): each server at a fixed slot of its tier's
// cadence, new servers and retries first, and every host within its caps,
// counting what was already planned (the ledger in package data) as well as
// what has run.
//
// A host with more servers than its caps allow is stretched: each of its
// servers keeps its slot but is due only in some of its cycles, the same
// share for all, so every server is checked as often as the caps permit and
// none starves. The ledger records each server's effective cadence.
//
// PlanMinute (planminute.go) is the entry point of `plan` and of `run
// -loop`: it reads the inputs, plans with Planner.Plan and writes the
// ledger and the plan file.
//
// Package planner/sim runs the real planner minute by minute over a virtual
// clock and audits every rule over what it planned.
package planner
