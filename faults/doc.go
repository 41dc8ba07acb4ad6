// Package faults holds the fault-injection tests that span the prober's
// packages: a flipped byte in any file of the data directory, then the
// next plan, run and publish. It has no code of its own.
package faults
