package planner

import (
	"cmp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// matched is the ledger matched to the list: a record for each listed
// server, and the servers whose state must be looked at.
type matched struct {
	out     []spool.LedgerServer // the ledger's records, in the list's order
	look    []int32              // servers whose state is looked at
	removed int                  // records of servers no longer listed
}

// matchLedger finds each listed server's record, side by side on every
// core. The ledger keeps the list's order, so while the list is unchanged
// each record is where the server is. A server without a record, or at a
// new address, is a new server.
func (p *pass) matchLedger() {
	start, servers, addrs, hosts, sh, l := p.start, p.in.Servers, p.addrs, p.hosts, &p.sh, p.l
	n := len(servers)
	old := l.Servers
	prev, inPlace := matchRecords(old, servers)
	m := matched{out: old} // while the list is unchanged, each record stays where it is
	if !inPlace {
		m.out = make([]spool.LedgerServer, n)
	}
	var mu sync.Mutex
	found := 0
	inParallel(n, func(lo, hi int) {
		var mine []int32
		mineFound := 0
		for i := lo; i < hi; i++ {
			s := &servers[i]
			host := hosts.ofServer[i]
			e := &m.out[i]
			ok := prev[i] >= 0
			if ok && !inPlace {
				*e = old[prev[i]]
			}
			if ok {
				mineFound++
			}
			if !ok || e.URLHash != addrs.urlHash[i] {
				*e = spool.LedgerServer{ID: s.ID, URLHash: addrs.urlHash[i], FirstSeen: start} // listed, or at a new address: a new server
			}
			e.Rank = int32(s.Rank)
			if host == pausedHost { // rule S8
				e.NextDue, e.Cadence, e.Resume = 0, 0, start+minute
			} else if host == followerHost {
				// its lead's planning is mirrored onto it (sharing.mirror)
			} else if sh.leads(i) || e.Seen == 0 || e.Planned > e.Seen || e.NextDue < start+minute ||
				int64(e.Cadence) != int64(data.Tier(s.Rank)/time.Second)*hosts.stretch(host)/stretchUnit {
				// Most servers are not due and nothing new is known of
				// them: their last result was seen, no check has been
				// planned since (results come only from planned checks),
				// and their cadence is the same. Their due time stands,
				// without a look at their state; the others' is worked
				// out by collectOwed from it. A shared address is always
				// looked at: its servers come and go.
				mine = append(mine, int32(i))
			}
		}
		mu.Lock()
		m.look = append(m.look, mine...)
		found += mineFound
		mu.Unlock()
	})
	m.removed = len(old) - found
	p.m = m
}

// matchRecords returns for each listed server the index of its record in
// old, -1 for none, and whether each record is at its server's index (the
// list unchanged), which every core checks of its share first. Both are in
// rank order, so walking them side by side finds nearly every record;
// those whose rank changed are matched by id.
func matchRecords(old []spool.LedgerServer, list []data.Server) (prev []int32, inPlace bool) {
	prev = make([]int32, len(list))
	if len(old) == len(list) && inPlaceAll(old, list, prev) {
		return prev, true
	}
	var lost []int // list servers not found in place
	loose := map[string]int32{}
	k := 0
	for i, s := range list {
		if k < len(old) && old[k].ID == s.ID { // the usual case: in place
			prev[i] = int32(k)
			k++
			continue
		}
		for k < len(old) && cmp.Or(cmp.Compare(int(old[k].Rank), s.Rank), strings.Compare(old[k].ID, s.ID)) < 0 {
			loose[old[k].ID] = int32(k)
			k++
		}
		if k < len(old) && old[k].ID == s.ID {
			prev[i] = int32(k)
			k++
			continue
		}
		prev[i] = -1
		lost = append(lost, i)
	}
	for ; k < len(old); k++ {
		loose[old[k].ID] = int32(k)
	}
	for _, i := range lost {
		if k, ok := loose[list[i].ID]; ok {
			prev[i] = k
		}
	}
	return prev, false
}

// inPlaceAll reports whether each record of old is its listed server's,
// at the same index, setting prev to the identity on every core as it
// checks.
func inPlaceAll(old []spool.LedgerServer, list []data.Server, prev []int32) bool {
	var moved atomic.Bool
	inParallel(len(list), func(lo, hi int) {
		for i := lo; i < hi && !moved.Load(); i++ {
			if old[i].ID != list[i].ID {
				moved.Store(true)
			}
			prev[i] = int32(i)
		}
	})
	return !moved.Load()
}
