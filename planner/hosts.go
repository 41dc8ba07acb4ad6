package planner

import "plug.directory/prober/data"

// hostWork is one host during a plan: its stretch, and the starts counted
// toward its caps (rule S3).
type hostWork struct {
	name    string
	stretch int64  // eighths (see hostStretch)
	used    uint64 // seconds of the minute taken, one bit each
	starts  []data.HostStart
	changed bool
}

// hostIndex is every host of a plan and each server's host.
type hostIndex struct {
	hosts     []*hostWork
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
// stretch (rule S4). Hosts are found by the first hash of their name,
// cheaper than a string map, and told apart by the second, which does not
// touch the other name's memory; a name whose hashes both collide (never
// seen) goes to byName.
func (p *pass) indexHosts() {
	servers, sh, addrs, l := p.in.Servers, &p.sh, p.addrs, p.l
	paused := sh.paused
	x := &hostIndex{ofServer: make([]int32, len(servers))}
	byHash := make(map[uint64]int32, len(l.Hosts)+1024)
	var byName map[string]int32
	var nameCheck []uint64 // second hash of each host's name
	var demand []int64     // routine demand of each host: 24 per hourly server, 1 per daily one
	add := func(h string, check uint64) int32 {
		x.hosts = append(x.hosts, &hostWork{name: h, starts: l.Hosts[h]})
		nameCheck = append(nameCheck, check)
		demand = append(demand, 0)
		return int32(len(x.hosts) - 1)
	}
	for i := range servers {
		s := &servers[i]
		if len(paused) > 0 && paused[s.ID] {
			x.ofServer[i] = pausedHost
			continue
		}
		if sh.follower(i) {
			x.ofServer[i] = followerHost
			continue
		}
		h := addrs.hostName[i]
		if h == "" {
			x.ofServer[i] = noHost
			continue
		}
		hash, check := addrs.hostHash[2*i], addrs.hostHash[2*i+1]
		k, ok := byHash[hash]
		switch {
		case !ok:
			k = add(h, check)
			byHash[hash] = k
		case nameCheck[k] != check:
			if byName == nil {
				byName = map[string]int32{}
			}
			if k, ok = byName[h]; !ok {
				k = add(h, check)
				byName[h] = k
			}
		}
		x.ofServer[i] = k
		if s.Rank >= 1 && s.Rank <= data.HourlyTierMaxRank {
			demand[k] += 24
		} else {
			demand[k]++
		}
	}
	x.stretches = make([]int64, len(x.hosts))
	for k, h := range x.hosts {
		h.stretch = hostStretch(demand[k])
		x.stretches[k] = h.stretch
	}
	p.hosts = x
}
