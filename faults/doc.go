// Package faults holds the tests that span the prober's packages: a
// flipped byte in any file of the data directory, then the next plan, run
// and publish; a publish killed part-way; and days of minutes on an
// injected clock, after which every directory is held to its bound. It has
// no code of its own.
package faults
