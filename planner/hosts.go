package planner

import "plug.directory/prober/data/spool"

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
// stretch (rule S4), on every core: each finds the hosts of its share of
// the buckets of byHost, so no two touch one host.
func (p *pass) indexHosts() {
	servers, sh, addrs, l := p.in.Servers, &p.sh, p.addrs, p.l
	n := len(servers)
	x := &hostIndex{ofServer: make([]int32, n)}
	inParallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			switch {
			case sh.isPaused(i):
				x.ofServer[i] = pausedHost
			case sh.follower(i):
				x.ofServer[i] = followerHost
			case addrs.hostName[i] == "":
				x.ofServer[i] = noHost
			}
		}
	})
	g := &addrs.byHost
	found := make([]hostShare, cores(n))
	workerOf := make([]int, g.buckets()) // of each bucket: the core that finds its hosts
	g.inBuckets(len(found), func(w, lo, hi int) {
		f := &found[w]
		f.names = make([]string, 0, len(l.Hosts)/len(found))
		f.demand = make([]int64, 0, len(l.Hosts)/len(found))
		for b := lo; b < hi; b++ {
			workerOf[b] = w
			f.find(g.bucket(b), addrs.hostName, x.ofServer)
		}
	})
	// Each core's hosts after the one before it's, written by each core.
	offset := make([]int32, len(found)+1)
	for w, f := range found {
		offset[w+1] = offset[w] + int32(len(f.names))
	}
	x.hosts = make([]hostWork, offset[len(found)])
	x.stretches = make([]int64, len(x.hosts))
	inRuns(len(found), len(found), func(w, _, _ int) {
		f, at := &found[w], int(offset[w])
		for k, h := range f.names {
			st := hostStretch(f.demand[k])
			x.hosts[at+k] = hostWork{name: h, starts: l.Hosts[h], stretch: st}
			x.stretches[at+k] = st
		}
	})
	if len(found) > 1 {
		inParallel(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if k := x.ofServer[i]; k >= 0 {
					x.ofServer[i] = k + offset[workerOf[g.of[i]]]
				}
			}
		})
	}
	p.hosts = x
}

// hostShare is the hosts of one core's share of the buckets, in the order
// their first server comes in the buckets.
type hostShare struct {
	slots  []hostSlot // open addressing by the first hash over one bucket's hosts: it stays in the core's cache
	full   int        // slots taken by the bucket's hosts
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

// minHostSlots is the slots of hostShare for a bucket's hosts, before any
// grows: a bucket holds about a tenth as many hosts as servers.
const minHostSlots = 512

// find indexes the hosts of one bucket: for each server of a host,
// neither following another nor paused (ofServer holds pausedHost for one
// paused), its index in the share goes to ofServer. Hosts are found by the
// first hash of their name and told apart by the second, which does not
// touch the other name's memory.
func (f *hostShare) find(ents []hostEntry, hostName []string, ofServer []int32) {
	if len(f.slots) != minHostSlots {
		f.slots = make([]hostSlot, minHostSlots)
	} else {
		clear(f.slots)
	}
	f.full = 0
	for j := range ents {
		e := &ents[j]
		if e.follower || ofServer[e.server] == pausedHost {
			continue
		}
		mask := uint64(len(f.slots) - 1)
		i := e.host & mask
		for f.slots[i].k != 0 && f.slots[i].hash != e.host {
			i = (i + 1) & mask
		}
		var k int32
		switch sl := &f.slots[i]; {
		case sl.k == 0:
			k = f.add(hostName[e.server])
			*sl = hostSlot{hash: e.host, check: e.check, k: k + 1}
			if f.full++; 2*f.full > len(f.slots) {
				f.grow()
			}
		case sl.check == e.check:
			k = sl.k - 1
		default:
			if f.byName == nil {
				f.byName = map[string]int32{}
			}
			h := hostName[e.server]
			var ok bool
			if k, ok = f.byName[h]; !ok {
				k = f.add(h)
				f.byName[h] = k
			}
		}
		ofServer[e.server] = k
		if e.hourly {
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

// grow doubles the slots, placing again the hosts already found.
func (f *hostShare) grow() {
	old := f.slots
	f.slots = make([]hostSlot, 2*len(old))
	mask := uint64(len(f.slots) - 1)
	for _, sl := range old {
		if sl.k == 0 {
			continue
		}
		j := sl.hash & mask
		for f.slots[j].k != 0 {
			j = (j + 1) & mask
		}
		f.slots[j] = sl
	}
}
