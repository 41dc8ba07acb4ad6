package planner

import (
	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// addresses holds what each server's address hashes to: the ledger notices
// a new address by its hash, and hosts are told apart by two hashes of
// their name.
type addresses struct {
	urlHash  []uint64
	keyHash  []uint64 // of data.AddressKey: servers at one address share it
	hostName []string // "" for a server without an address
	hostHash []uint64 // two hashes of the host's name per server
}

// hashAddresses hashes every server's address side by side on every core.
// At a million servers a plan is mostly waiting for memory.
func (p *pass) hashAddresses() {
	servers := p.in.Servers
	n := len(servers)
	a := addresses{urlHash: make([]uint64, n), keyHash: make([]uint64, n), hostName: make([]string, n), hostHash: make([]uint64, 2*n)}
	inParallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			s := &servers[i]
			a.urlHash[i] = spool.URLHash(s.URL)
			if h, ownKey := data.AddressOf(s.URL); h != "" {
				a.keyHash[i] = a.urlHash[i] // nearly every address is its own key
				if !ownKey {
					a.keyHash[i] = spool.URLHash(data.AddressKey(s.URL))
				}
				a.hostName[i] = h
				a.hostHash[2*i], a.hostHash[2*i+1] = data.StableHash(h, 0x686f7374), data.StableHash(h, 0x6e616d65)
			}
		}
	})
	p.addrs = a
}
