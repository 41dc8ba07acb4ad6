package planner

import (
	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// sharing is the servers listed at one address (data.AddressKey),
// checked once for all. The first of them in rank order, the lead, has the best rank:
// it is checked for all, at a slot derived from the address (rule S2), and
// its host counts the check once (rule S3). The others follow it: they are
// not planned, their ledger records mirror the lead's, and the runner
// journals the lead's result for each of them (data.PlannedCheck.Results).
type sharing struct {
	lead    []int32                      // per server: the index of its lead, -1 for a lead or a server alone at its address; nil when no address is shared
	follows map[int32][]int32            // lead -> the others at its address, in rank order
	before  map[int32]spool.LedgerServer // lead -> a follower's record of the address's last check, planned before the lead was listed (adopt)
	paused  []bool                       // per server: addresses.paused, widened to every server at an address one of its servers is paused at; nil when none is
}

// shareAddresses finds the addresses listed more than once, on every core:
// the servers of one address share a host, so each core takes its share of
// the buckets of byHost, in rank order, and a lead is the first of its
// address as one pass over the list would find it. A paused server pauses
// its address: the owner asked for the endpoint not to be checked,
// whichever listing the request named (rule S8). More than
// spool.MaxShared servers at one address are led in groups of MaxShared.
func shareAddresses(servers []data.Server, addrs addresses) sharing {
	sh := sharing{paused: addrs.paused}
	g := &addrs.byHost
	found := make([]map[int32][]int32, cores(len(servers))) // of each core: lead -> the others at its address
	g.inBuckets(len(found), func(w, lo, hi int) {
		var seen addrTable
		for b := lo; b < hi; b++ {
			found[w] = shareBucket(found[w], g.bucket(b), servers, &seen)
		}
	})
	for _, follows := range found {
		for k, fs := range follows {
			if sh.lead == nil {
				sh.lead = make([]int32, len(servers))
				for j := range sh.lead {
					sh.lead[j] = -1
				}
				sh.follows = map[int32][]int32{}
			}
			sh.follows[k] = fs
			for _, f := range fs {
				sh.lead[f] = k
			}
		}
	}
	if sh.paused == nil || sh.follows == nil {
		return sh
	}
	// Paused by key, as the groups of one address share it.
	keyPaused := map[string]bool{}
	for k, fs := range sh.follows {
		for _, i := range append([]int32{k}, fs...) {
			if sh.paused[i] {
				keyPaused[data.AddressKey(servers[k].URL)] = true
			}
		}
	}
	if len(keyPaused) == 0 {
		return sh
	}
	for k, fs := range sh.follows {
		if keyPaused[data.AddressKey(servers[k].URL)] {
			sh.paused[k] = true
			for _, i := range fs {
				sh.paused[i] = true
			}
		}
	}
	return sh
}

// shareBucket adds to follows (made when first needed) the leads of the
// addresses listed more than once among the servers of one bucket, each
// with the others at its address in rank order.
func shareBucket(follows map[int32][]int32, ents []hostEntry, servers []data.Server, seen *addrTable) map[int32][]int32 {
	seen.reset(len(ents))
	for j := range ents {
		e := &ents[j]
		slot := seen.find(e.key, ents)
		first := int(*slot&slotIndex) - 1
		if first < 0 {
			seen.put(slot, e.key, j)
			continue
		}
		k := ents[first].server
		switch {
		case data.AddressKey(servers[k].URL) != data.AddressKey(servers[e.server].URL):
			// two addresses of one hash (never seen): each is checked alone
		case len(follows[k])+1 >= spool.MaxShared:
			seen.put(slot, e.key, j) // a full group: this one leads the next
		default:
			if follows == nil {
				follows = map[int32][]int32{}
			}
			follows[k] = append(follows[k], e.server)
			e.follower = true
		}
	}
	return follows
}

// addrTable finds the first server of each address hash in a bucket:
// open addressing over the hashes the servers already have, several times
// cheaper than a map. A slot holds the top half of the hash beside the
// server's place in the bucket, so that a lookup reads the server's entry
// only when the halves match.
type addrTable struct {
	at []uint64 // hash's top half | 1 + place in the bucket; 0 for an empty slot
}

// slotIndex masks a slot of addrTable to 1 + its server's place.
const slotIndex = 1<<32 - 1

// reset empties the table for a bucket of n servers, at most half full
// when each is at an address of its own.
func (t *addrTable) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if cap(t.at) < size {
		t.at = make([]uint64, size)
		return
	}
	t.at = t.at[:size]
	clear(t.at)
}

// find returns the slot of hash h: the one holding a server of ents whose
// key hash is h, or the empty one where it goes.
func (t *addrTable) find(h uint64, ents []hostEntry) *uint64 {
	mask := uint64(len(t.at) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		e := t.at[j]
		if e == 0 || e&^slotIndex == h&^slotIndex && ents[e&slotIndex-1].key == h {
			return &t.at[j]
		}
	}
}

// put puts the server at place j of the bucket, whose key hash is h, in
// slot (from find).
func (t *addrTable) put(slot *uint64, h uint64, j int) { *slot = h&^slotIndex | uint64(j+1) }

// follower reports whether server i follows the lead of its address.
func (sh *sharing) follower(i int) bool { return sh.lead != nil && sh.lead[i] >= 0 }

// isPaused reports whether server i is not to be checked (rule S8): named
// by the paused list, or at the address of one named.
func (sh *sharing) isPaused(i int) bool { return sh.paused != nil && sh.paused[i] }

// leads reports whether server i leads others at its address.
func (sh *sharing) leads(i int) bool { return len(sh.follows[int32(i)]) > 0 }

// slot returns the hash that fixes server i's slot (rule S2): its address's
// when it leads others, so that the address keeps its minute whichever of
// its servers come and go; its id's otherwise.
func (sh *sharing) slot(i int, s *data.Server) uint64 {
	if sh.leads(i) {
		return addressSlotHash(s.URL)
	}
	return slotHash(s.ID)
}

// state returns what the checks of server i's address learned: for a lead,
// the latest state of its servers at their addresses, preferring one that
// has answered and then the longest failing streak, since a server listed
// later holds only the results since it joined (rules S6, S7).
func (sh *sharing) state(states map[string]data.State, i int, servers []data.Server) (data.State, bool) {
	s := &servers[i]
	st, has := states[s.ID]
	has = has && st.URL == s.URL
	for _, f := range sh.follows[int32(i)] {
		o, ok := states[servers[f].ID]
		if !ok || o.URL != servers[f].URL {
			continue
		}
		if !has || better(o, st) {
			st, has = o, true
		}
	}
	return st, has
}

// better reports whether state a knows more of the address than b.
func better(a, b data.State) bool {
	switch {
	case !a.LastCheck.Equal(b.LastCheck):
		return a.LastCheck.After(b.LastCheck)
	case a.EverAnswered() != b.EverAnswered():
		return a.EverAnswered()
	default:
		return !a.FailingSince.IsZero() && (b.FailingSince.IsZero() || a.FailingSince.Before(b.FailingSince))
	}
}

// adopt gives each lead's record the address's last check planned since
// the lead was listed there, which another of its servers may hold (the
// one that led before, or a follower mirroring it), so that a new lead
// neither checks the address again at once nor takes a check in flight for
// lost. A check planned before the lead was listed is the address's, not
// the lead's: its result is kept under the listings of then. The lead plans
// from it while it leads (sharing.view), but its record does not keep it,
// so that standing alone later it does not take it for its own check lost,
// owed again at once off its slot (rule S2), as a follower's record does
// not (mirror).
func (sh *sharing) adopt(out []spool.LedgerServer) {
	for k, fs := range sh.follows {
		e := &out[k]
		var before spool.LedgerServer // the address's last check planned before e was listed
		for _, f := range fs {
			switch o := out[f]; {
			case o.Planned <= e.Planned:
			case o.Planned >= e.FirstSeen:
				e.Planned, e.Reason, e.PrevPlanned, e.PrevReason = o.Planned, o.Reason, o.PrevPlanned, o.PrevReason
			case o.Planned > before.Planned:
				before = o
			}
		}
		if before.Planned > e.Planned {
			if sh.before == nil {
				sh.before = map[int32]spool.LedgerServer{}
			}
			sh.before[k] = before
		}
	}
}

// view returns record e of server i as its address knows it: for a lead,
// with the address's last check when it was planned before the lead was
// listed (see adopt).
func (sh *sharing) view(e spool.LedgerServer, i int32) spool.LedgerServer {
	if o, ok := sh.before[i]; ok && o.Planned > e.Planned {
		e.Planned, e.Reason, e.PrevPlanned, e.PrevReason = o.Planned, o.Reason, o.PrevPlanned, o.PrevReason
	}
	return e
}

// firstSeen returns the latest first sighting among the servers of server
// i's address: a server listed later at an address never checked makes its
// first check a new server's (rule S5); one joining an address already
// checked is not new, and waits for the address's next check.
func (sh *sharing) firstSeen(out []spool.LedgerServer, i int) int64 {
	t := out[i].FirstSeen
	for _, f := range sh.follows[int32(i)] {
		t = max(t, out[f].FirstSeen)
	}
	return t
}

// mirror copies each lead's planning onto its followers' records, so the
// ledger tells of every listed server when its address is next checked.
// Every Seen of the address is 0, the lead's too: its due time is the
// address's slot's (rule S2), which holds only while it leads, so should it
// come to stand alone (its followers gone), the next plan works its due out
// afresh from its own slot, rather than keeping the address's for up to a
// cycle and then finding its own long past.
func (sh *sharing) mirror(out []spool.LedgerServer) {
	for k, fs := range sh.follows {
		out[k].Seen = 0
		e := out[k]
		for _, f := range fs {
			o := &out[f]
			o.NextDue, o.Cadence, o.Seen = e.NextDue, e.Cadence, 0
			if o.FirstSeen > e.Planned {
				// Listed at the address after its last check, which was
				// not for it (nor its result kept at this address): should
				// it come to stand alone unchecked, it is new (rule S5),
				// not owed that check again as lost.
				continue
			}
			if o.Planned > e.Planned {
				continue // the address's last check, planned before its lead was listed (adopt): it keeps it
			}
			o.Planned, o.Reason, o.PrevPlanned, o.PrevReason = e.Planned, e.Reason, e.PrevPlanned, e.PrevReason
		}
	}
}

// also returns the listings that follow server i, for its planned check.
func (sh *sharing) also(i int, servers []data.Server) []data.Listing {
	fs := sh.follows[int32(i)]
	if len(fs) == 0 {
		return nil
	}
	out := make([]data.Listing, len(fs))
	for j, f := range fs {
		out[j] = data.Listing{ID: servers[f].ID, URL: servers[f].URL}
	}
	return out
}
