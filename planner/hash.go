package planner

import (
	"math/bits"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// addresses holds what each server's address hashes to: the ledger notices
// a new address by its hash, and the servers with an address are grouped
// by their host (byHost), where the addresses listed twice and the hosts
// are found.
type addresses struct {
	urlHash  []uint64
	hostName []string // "" for a server without an address
	byHost   byHost
	paused   []bool // per server: named by the paused list (Input.Paused); nil when it names none
}

// byHost is the servers with an address grouped by their host's first
// hash: bucket b is ents[start[b]:start[b+1]], in rank order. The servers
// of one host, and so of one address, share a bucket, and a bucket's hosts
// and addresses fit tables that stay in a core's cache: at a million
// servers, tables of all of them would miss it at nearly every lookup.
type byHost struct {
	ents  []hostEntry
	start []int32  // len = buckets + 1
	of    []uint16 // the bucket of each server, noBucket for one without an address
}

// noBucket is the bucket of a server without an address in byHost.of.
const noBucket = 1<<16 - 1

// hostEntry is one server with an address in byHost.
type hostEntry struct {
	key         uint64 // hash of data.AddressKey: servers at one address share it
	host, check uint64 // two hashes of the host's name, told apart by both
	server      int32  // index in Input.Servers
	hourly      bool   // in the hourly tier: 24 checks a day of its host's demand
	follower    bool   // at an address another server leads (shareBucket)
}

// buckets returns the number of buckets of byHost for n servers: a power
// of two, about 2,048 servers each, and at most 1<<15, so that a bucket's
// number never reaches noBucket.
func buckets(n int) int { return 1 << min(15, bits.Len(uint(n/2048))) }

// bucketOf returns the bucket of host hash h among nb: its top bits.
func bucketOf(h uint64, nb int) int { return int(h >> (64 - bits.TrailingZeros(uint(nb)))) }

// hashAddresses hashes every server's address side by side on every core,
// and finds the servers the paused list names, by the same hashes; then it
// groups the servers by host (byHost), each core placing its run of the
// list. At a million servers a plan is mostly waiting for memory.
func (p *pass) hashAddresses() {
	servers := p.in.Servers
	n := len(servers)
	a := addresses{urlHash: make([]uint64, n), hostName: make([]string, n)}
	pn := newPausedNames(p.in.Paused)
	p.paused = pn
	if pn != nil {
		a.paused = make([]bool, n)
	}
	g := &a.byHost
	g.of = make([]uint16, n)
	mine := make([]hostEntry, n) // each server's entry, in list order
	nb, parts := buckets(n), cores(n)
	counts := make([][]int32, parts) // of each core's run: servers in each bucket
	inRuns(n, parts, func(w, lo, hi int) {
		count := make([]int32, nb)
		for i := lo; i < hi; i++ {
			s := &servers[i]
			a.urlHash[i] = spool.URLHash(s.URL)
			h, ownKey := data.AddressOf(s.URL)
			e := hostEntry{key: a.urlHash[i], server: int32(i), hourly: s.Rank >= 1 && s.Rank <= data.HourlyTierMaxRank}
			if h != "" && !ownKey { // nearly every address is its own key
				e.key = spool.URLHash(data.AddressKey(s.URL))
			}
			if pn != nil {
				// A listed address has a host (lists.ReadServers keeps
				// none without one), so h tells which servers have one.
				a.paused[i] = pn.names(s, h != "", e.key)
			}
			if h == "" {
				g.of[i] = noBucket
				continue
			}
			e.host, e.check = data.StableHashPair(h, 0x686f7374, 0x6e616d65)
			a.hostName[i] = h
			mine[i] = e
			b := bucketOf(e.host, nb)
			g.of[i] = uint16(b)
			count[b]++
		}
		counts[w] = count
	})
	// Bucket by bucket, each core's run after the one before it: rank order.
	at := make([][]int32, parts) // where each core puts its next server of each bucket
	for w := range at {
		at[w] = make([]int32, nb)
	}
	g.start = make([]int32, nb+1)
	var next int32
	for b := range nb {
		g.start[b] = next
		for w := range parts {
			at[w][b] = next
			next += counts[w][b]
		}
	}
	g.start[nb] = next
	g.ents = make([]hostEntry, next)
	inRuns(n, parts, func(w, lo, hi int) {
		at := at[w]
		for i := lo; i < hi; i++ {
			if b := g.of[i]; b != noBucket {
				g.ents[at[b]] = mine[i]
				at[b]++
			}
		}
	})
	p.addrs = a
}

// bucket returns the servers of bucket b.
func (g *byHost) bucket(b int) []hostEntry { return g.ents[g.start[b]:g.start[b+1]] }

// buckets returns the number of buckets.
func (g *byHost) buckets() int { return len(g.start) - 1 }

// inBuckets calls f for each core's share of the buckets, w of parts, on a
// core of its own, and waits for all: no two cores touch one host.
func (g *byHost) inBuckets(parts int, f func(w, lo, hi int)) {
	inRuns(g.buckets(), parts, f)
}
