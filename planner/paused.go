package planner

import (
	"strings"
	"sync/atomic"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
)

// pausedNames is Input.Paused ready to be matched server by server in the
// pass over every address (hashAddresses), at the cost of a lookup of the
// server's id and one of its address key's hash, which that pass has:
// lists.PausedList.Match, which builds nothing a million long either,
// still works out each server's address again, a tenth of a plan.
// Servers are named as Match names them; sharing widens the pause to
// every server at the address of one named.
type pausedNames struct {
	entries []lists.PausedEntry
	ids     map[string][]int32 // an id named -> the entries naming it
	keys    map[uint64][]int32 // spool.URLHash of an address key an entry's address matches -> those entries
	addrs   []string           // of each entry, lists.NormalizeAddress of its address; "" for an id
	named   []atomic.Bool      // of each entry: a listed server has its id or address
}

// newPausedNames indexes the entries of l; nil when it has none.
func newPausedNames(l lists.PausedList) *pausedNames {
	if len(l.Entries) == 0 {
		return nil
	}
	p := &pausedNames{entries: l.Entries, addrs: make([]string, len(l.Entries)), named: make([]atomic.Bool, len(l.Entries))}
	for k, e := range l.Entries {
		if !e.IsAddress() {
			if p.ids == nil {
				p.ids = map[string][]int32{}
			}
			p.ids[e.Value] = append(p.ids[e.Value], int32(k))
			continue
		}
		// A server's normalized address is its address key without one
		// trailing slash: the key is the entry's with a slash, or without
		// one when that leaves none to take off.
		n := lists.NormalizeAddress(e.Value)
		p.addrs[k] = n
		if p.keys == nil {
			p.keys = map[uint64][]int32{}
		}
		for _, key := range []string{n + "/", n} {
			if key == n && strings.HasSuffix(n, "/") {
				continue
			}
			h := spool.URLHash(key)
			p.keys[h] = append(p.keys[h], int32(k))
		}
	}
	return p
}

// names reports whether the list names server s, by its id or, when it has
// an address, by that address, whose key hashes to key; each entry that
// names it is marked named. Safe on every core at once.
func (p *pausedNames) names(s *data.Server, hasKey bool, key uint64) bool {
	found := false
	if len(p.ids) > 0 {
		for _, k := range p.ids[s.ID] {
			p.named[k].Store(true)
			found = true
		}
	}
	if hasKey && len(p.keys) > 0 {
		if ks := p.keys[key]; len(ks) > 0 {
			n := lists.NormalizeAddress(s.URL) // the hash's verdict, made sure of
			for _, k := range ks {
				if p.addrs[k] == n {
					p.named[k].Store(true)
					found = true
				}
			}
		}
	}
	return found
}

// unmatched returns the entries that named no listed server, in the
// list's order.
func (p *pausedNames) unmatched() []lists.PausedEntry {
	var out []lists.PausedEntry
	for k, e := range p.entries {
		if !p.named[k].Load() {
			out = append(out, e)
		}
	}
	return out
}
