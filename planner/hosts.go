package planner

import (
	"runtime"
	"sync"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// hostWork is one host during a plan: its stretch, and the starts counted
// toward its caps (rule S3).
type hostWork struct {
	name    string
	stretch int64  // eighths (see hostStretch)
	used    uint64 // seconds of the minute taken, one bit each
	starts  []spool.HostStart
	changed bool
}

// hostIndex is every host of a plan and each server's host.
type hostIndex struct {
	hosts     []hostWork
	ofServer  []int32 // index in hosts, or noHost, pausedHost
	stretches []int64 // of each host, as hosts[k].stretch, packed for the cores
}

// stretch returns the stretch of a server on host k (see hostStretch); a
// server without a host keeps its tier's pace.
func (x *hostIndex) stretch(k int32) int64 {
	if k >= 0 {
		return x.stretches[k]
	}
	return stretchUnit
}

// indexHosts finds the hosts and their routine demand, which sets their
// stretch (rule S4), on every core: each finds the hosts of one share of
// the hashes (findHosts), so no two touch one host.
func (p *pass) indexHosts() {
	servers, sh, addrs, l := p.in.Servers, &p.sh, p.addrs, p.l
	n := len(servers)
	x := &hostIndex{ofServer: make([]int32, n)}
	inParallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			switch {
			case len(sh.paused) > 0 && sh.paused[servers[i].ID]:
				x.ofServer[i] = pausedHost
			case sh.follower(i):
				x.ofServer[i] = followerHost
			case addrs.hostName[i] == "":
				x.ofServer[i] = noHost
			}
		}
	})
	parts := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	found := make([]hostShare, parts)
	var wg sync.WaitGroup
	for w := range found {
		wg.Go(func() { found[w].find(w, parts, servers, addrs, x.ofServer, len(l.Hosts)/parts) })
	}
	wg.Wait()
	offset := make([]int32, parts)
	total := 0
	for _, f := range found {
		total += len(f.names)
	}
	x.hosts = make([]hostWork, 0, total)
	for w, f := range found {
		offset[w] = int32(len(x.hosts))
		for k, h := range f.names {
			x.hosts = append(x.hosts, hostWork{name: h, starts: l.Hosts[h], stretch: hostStretch(f.demand[k])})
		}
	}
	if parts > 1 {
		inParallel(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if k := x.ofServer[i]; k >= 0 {
					x.ofServer[i] = k + offset[addrs.hostHash[2*i]%uint64(parts)]
				}
			}
		})
	}
	x.stretches = make([]int64, len(x.hosts))
	for k := range x.hosts {
		x.stretches[k] = x.hosts[k].stretch
	}
	p.hosts = x
}

// hostShare is the hosts whose first hash is w modulo the shares, in the
// order their first server comes in the list.
type hostShare struct {
	slots  []hostSlot // open addressing by the first hash: a fraction of a map's cost at a million lookups
	names  []string
	demand []int64          // routine demand of each host: 24 per hourly server, 1 per daily one
	byName map[string]int32 // hosts whose both hashes collide with another's (never seen)
}

// hostSlot is one host in hostShare.slots: both hashes of its name side by
// side, so that a lookup touches one cache line.
type hostSlot struct {
	hash, check uint64
	k           int32 // 1 + index in names; 0: empty
}

// find indexes the hosts of share w of parts: for each server of such a
// host (ofServer 0 so far), its index in the share goes to ofServer.
// Hosts are found by the first hash of their name and told apart by the
// second, which does not touch the other name's memory.
func (f *hostShare) find(w, parts int, servers []data.Server, addrs addresses, ofServer []int32, hint int) {
	f.grow(hint)
	for i := range servers {
		hash := addrs.hostHash[2*i]
		if hash%uint64(parts) != uint64(w) || ofServer[i] < 0 {
			continue
		}
		check := addrs.hostHash[2*i+1]
		j := (hash >> 8) & uint64(len(f.slots)-1)
		for f.slots[j].k != 0 && f.slots[j].hash != hash {
			j = (j + 1) & uint64(len(f.slots)-1)
		}
		var k int32
		switch sl := &f.slots[j]; {
		case sl.k == 0:
			k = f.add(addrs.hostName[i])
			*sl = hostSlot{hash: hash, check: check, k: k + 1}
			if 2*len(f.names) > len(f.slots) {
				f.grow(2 * len(f.names))
			}
		case sl.check == check:
			k = sl.k - 1
		default:
			if f.byName == nil {
				f.byName = map[string]int32{}
			}
			h := addrs.hostName[i]
			var ok bool
			if k, ok = f.byName[h]; !ok {
				k = f.add(h)
				f.byName[h] = k
			}
		}
		ofServer[i] = k
		if r := servers[i].Rank; r >= 1 && r <= data.HourlyTierMaxRank {
			f.demand[k] += 24
		} else {
			f.demand[k]++
		}
	}
}

func (f *hostShare) add(name string) int32 {
	f.names = append(f.names, name)
	f.demand = append(f.demand, 0)
	return int32(len(f.names) - 1)
}

// grow makes room for n hosts with at most half the slots full, placing
// again those already found.
func (f *hostShare) grow(n int) {
	size := 1024
	for size < 2*n {
		size <<= 1
	}
	old := f.slots
	f.slots = make([]hostSlot, size)
	for _, sl := range old {
		if sl.k == 0 {
			continue
		}
		j := (sl.hash >> 8) & uint64(size-1)
		for f.slots[j].k != 0 {
			j = (j + 1) & uint64(size-1)
		}
		f.slots[j] = sl
	}
}
