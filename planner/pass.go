package planner

import (
	"runtime"
	"sync"

	"plug.directory/prober/data/spool"
)

// pass is one planning pass of Planner.Plan: what it plans from, and what
// each step leaves for the next. The steps are its methods, each in the
// file named for it: hash.go, shared.go, hosts.go, match.go, owed.go,
// place.go.
type pass struct {
	start int64 // unix s: the minute planned
	now   int64 // unix s: when the plan is made
	in    Input
	l     *spool.Ledger
	rep   *Report

	addrs  addresses    // hashAddresses: what each server's address hashes to
	paused *pausedNames // hashAddresses: the paused list's entries, each marked when it names a listed server; nil for none
	sh     sharing      // shareAddresses: the addresses listed more than once
	hosts  *hostIndex   // indexHosts: every host and each server's
	m      matched      // matchLedger: each server's record; collectOwed works out their due times
	cands  []candidate  // collectOwed: the checks owed, which placeAll places
}

// run takes the steps of the pass in turn: hash the addresses, share the
// addresses listed more than once, index the hosts, match the ledger,
// collect what is owed, place, mirror each shared address's planning onto
// its servers, forget the host starts no window can hold.
func (p *pass) run() error {
	p.hashAddresses()
	if p.paused != nil {
		p.rep.PausedUnmatched = p.paused.unmatched()
	}
	p.sh = shareAddresses(p.in.Servers, p.addrs)
	p.indexHosts()
	p.matchLedger()
	p.addrs = addresses{} // not needed after: the collector may have it before the states are read
	p.sh.adopt(p.m.out)
	if err := p.collectOwed(); err != nil {
		return err
	}
	p.rep.Removed = p.m.removed
	p.l.Servers = p.m.out
	p.l.Reindex()
	p.placeAll()
	p.sh.mirror(p.l.Servers)
	pruneHosts(p.l, p.start)
	p.l.LastMinute = max(p.l.LastMinute, p.start)
	return nil
}

// candidate is a check owed by the end of the minute being planned.
type candidate struct {
	server int   // index in Input.Servers: rank order, ties by id
	host   int32 // index in hostIndex.hosts, or noHost
	class  class
	due    int64 // unix s
	again  bool  // planned before and lost with no result: owed again from its planned second, whatever its class
	// learned by earlier checks of this address, for the runner (rule N4)
	protocol, transport string
}

// cores returns how many parts a step over n items is split into: one a
// core, none of fewer than 4,096 items.
func cores(n int) int { return min(runtime.GOMAXPROCS(0), max(1, n/4096)) }

// inParallel calls f on n items split into one run of neighbours per core
// and waits for all.
func inParallel(n int, f func(lo, hi int)) {
	inRuns(n, cores(n), func(_, lo, hi int) { f(lo, hi) })
}

// inRuns calls f on n items split into parts runs of neighbours, run w
// from lo to hi, each on a core of its own, and waits for all.
func inRuns(n, parts int, f func(w, lo, hi int)) {
	var wg sync.WaitGroup
	for w := range parts {
		wg.Go(func() { f(w, n*w/parts, n*(w+1)/parts) })
	}
	wg.Wait()
}
