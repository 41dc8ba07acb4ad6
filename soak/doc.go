// Package soak holds the months-long run of the prober: no code, only its
// test. It drives plan, run and publish together (planner.PlanMinute,
// runner.Run with the real check, site.Publish: the functions the commands
// call) minute by minute over simulated months on one jump clock, against
// scripted go-sdk servers of runner/fleet on loopback whose lives are a
// table (life_test.go), and holds every published figure to that table.
// It is a package of its own because no one package owns that: each of
// planner, runner and site tests itself alone, faults tests what a crash
// leaves, and only here do months of their work meet.
//
// go test ./soak runs ten days (-short: two days); make soak runs the
// 120 days from 2026-11-15 to 2027-03-15 (-soak.days 120) and prints what
// each day cost on disk and in time.
package soak
