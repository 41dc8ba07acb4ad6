package planner

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// TestAddrTable: the table finds every hash it was given, among hashes that
// share a top half or a slot; a hash it was not given finds an empty slot,
// and so does one of the bucket before it was reset.
func TestAddrTable(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	ents := make([]hostEntry, 5000)
	for i := range ents {
		switch h := r.Uint64(); i % 3 {
		case 0:
			ents[i].key = h
		case 1: // the top half of the one before
			ents[i].key = ents[i-1].key&^slotIndex | h&slotIndex
		case 2: // the low bits, which pick the slot, of the one before
			ents[i].key = h&^0xffff | ents[i-1].key&0xffff
		}
	}
	var tab addrTable
	tab.reset(len(ents))
	for i, e := range ents {
		slot := tab.find(e.key, ents)
		if *slot != 0 {
			t.Fatalf("hash %d of %x found before it was put", i, e.key)
		}
		tab.put(slot, e.key, i)
	}
	for i, e := range ents {
		if got := int(*tab.find(e.key, ents)&slotIndex) - 1; got != i {
			t.Errorf("hash %d of %x: found server %d", i, e.key, got)
		}
	}
	if e := *tab.find(r.Uint64(), ents); e != 0 {
		t.Errorf("a hash never put: found slot %x", e)
	}
	tab.reset(10)
	if e := *tab.find(ents[0].key, ents); e != 0 {
		t.Errorf("a hash of the bucket before: found slot %x", e)
	}
}

// fleet returns n servers on about hosts hosts, many listed at one address
// (several at more than spool.MaxShared), some written another way (the
// same key), some without an address, and one host of many addresses.
func fleet(n, hosts int) []data.Server {
	r := rand.New(rand.NewPCG(6, 7))
	var servers []data.Server
	for i := range n {
		u := fmt.Sprintf("https://h%d.example/mcp%d", r.IntN(hosts), r.IntN(4))
		switch {
		case i%100 == 0:
			u = "https://crowded.example/mcp"
		case i%7 == 0:
			u = fmt.Sprintf("HTTPS://H%d.EXAMPLE:443/mcp%d", r.IntN(hosts), r.IntN(4))
		case i%11 == 0:
			u = "not an address"
		case i%13 == 0:
			u = fmt.Sprintf("https://big.example/m%d", i) // a host of many addresses
		}
		servers = append(servers, data.Server{ID: fmt.Sprintf("s%05d", i), Rank: i + 1, URL: u})
	}
	return servers
}

// TestShareAddressesBuckets: found bucket by bucket on every core, the
// addresses listed more than once are those one pass over the list in rank
// order finds: the same leads (the first listed), the same followers in
// rank order, groups of spool.MaxShared, and an address written two ways
// is one (rule S3: one check an address).
func TestShareAddressesBuckets(t *testing.T) {
	servers := fleet(20_000, 3000)
	want := map[int32][]int32{}
	lead := map[string]int32{} // address key -> its current group's lead
	for i, s := range servers {
		if h, _ := data.AddressOf(s.URL); h == "" {
			continue
		}
		key := data.AddressKey(s.URL)
		k, ok := lead[key]
		if !ok || len(want[k])+1 >= spool.MaxShared {
			lead[key] = int32(i)
			continue
		}
		want[k] = append(want[k], int32(i))
	}
	if crowd := want[lead["https://crowded.example/mcp"]]; len(crowd) != 200%spool.MaxShared-1 || len(want) < 1000 {
		t.Fatalf("%d groups, the crowded address's last of %d: the fixture shares too little", len(want), len(crowd)+1)
	}
	p := pass{in: Input{Servers: servers}}
	p.hashAddresses()
	if nb := p.addrs.byHost.buckets(); nb < 4 {
		t.Fatalf("%d buckets: the fixture is too small to split", nb)
	}
	sh := shareAddresses(servers, p.addrs)
	if !maps.EqualFunc(sh.follows, want, slices.Equal) {
		t.Errorf("%d groups differ from one pass's %d", len(sh.follows), len(want))
	}
	for i := range servers {
		if k := sh.lead[i]; k >= 0 && !slices.Contains(want[k], int32(i)) {
			t.Errorf("server %d: lead %d, which it does not follow", i, k)
		}
	}
}

// TestIndexHostsBuckets: found bucket by bucket on every core, each server
// with an address has its host, named as data.AddressOf names it, one
// index a host, and each host the demand of its servers that are neither
// paused nor following another (rule S4): 24 an hourly server, 1 a daily
// one.
func TestIndexHostsBuckets(t *testing.T) {
	servers := fleet(20_000, 12_000) // more hosts in a bucket than its first slots hold
	p := pass{in: Input{Servers: servers, Paused: mustPausedList(t, "s00003\ns00005\n")}, l: spool.NewLedger()}
	p.hashAddresses()
	p.sh = shareAddresses(servers, p.addrs)
	p.indexHosts()
	x := p.hosts
	want := map[string]int64{}
	for i, s := range servers {
		h, _ := data.AddressOf(s.URL)
		k := x.ofServer[i]
		switch {
		case h == "":
			if k != noHost {
				t.Errorf("server %d without an address: host %d", i, k)
			}
		case p.sh.isPaused(i):
			if k != pausedHost {
				t.Errorf("server %d, paused: host %d", i, k)
			}
		case p.sh.follower(i):
			if k != followerHost {
				t.Errorf("server %d, a follower: host %d", i, k)
			}
		case k < 0 || int(k) >= len(x.hosts) || x.hosts[k].name != h:
			t.Errorf("server %d on %q: host %d", i, h, k)
		default:
			want[h] += map[bool]int64{true: 24, false: 1}[s.Rank <= data.HourlyTierMaxRank]
		}
	}
	if len(x.hosts) != len(want) {
		t.Errorf("%d hosts, want %d", len(x.hosts), len(want))
	}
	if k := x.ofServer[13]; k < 0 || x.hosts[k].stretch <= stretchUnit {
		t.Fatalf("big.example: host %d, not stretched: the fixture's demand tells nothing", k)
	}
	for k, h := range x.hosts {
		if h.stretch != hostStretch(want[h.name]) || x.stretches[k] != h.stretch {
			t.Errorf("host %q: stretch %d (packed %d), want %d of demand %d", h.name, h.stretch, x.stretches[k], hostStretch(want[h.name]), want[h.name])
		}
	}
}

// TestBuckets: a power of two of about 2,048 servers each, never so many
// that a bucket's number is noBucket.
func TestBuckets(t *testing.T) {
	for _, c := range []struct{ n, want int }{{0, 1}, {2047, 1}, {4096, 4}, {1_000_000, 512}, {1 << 27, 1 << 15}, {1 << 40, 1 << 15}} {
		if got := buckets(c.n); got != c.want || got > noBucket {
			t.Errorf("buckets(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}
