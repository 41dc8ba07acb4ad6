// Package sim runs the real planner (package planner) minute by minute over
// a virtual clock and audits what it planned: Sim plans and "runs" each
// minute, recording what its checks would find as the runner does; Audit
// checks every scheduling rule (S1-S9) over the plans, trusting nothing
// the planner computed but the ledger's cadence; Generate and EvolvingList
// make the test lists it runs on. The audit is in four files: its state
// and the calls Sim makes (audit.go), what a new list changes
// (auditlist.go), the rules each planned check is held to (auditcheck.go)
// and the report (auditreport.go). `plan -simulate` and `plan -generate`
// (cmd/plan) and the planner's property tests use it; production never
// does.
package sim
