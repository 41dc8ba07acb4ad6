// Package sim runs the real planner (package planner) minute by minute over
// a virtual clock and audits what it planned: Sim plans and "runs" each
// minute, recording what its checks would find as the runner does; Audit
// checks every scheduling rule (S1-S9) over the plans, trusting nothing
// the planner computed but the ledger's cadence; Generate and EvolvingList
// make the test lists it runs on. `plan -simulate` and `plan -generate`
// (cmd/plan) and the planner's property tests use it; production never
// does.
package sim
