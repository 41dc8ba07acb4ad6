package planner

import (
	"time"

	"plug.directory/prober/data"
)

// RoutineShare is the part of a host's hourly cap (data.HostMaxPerHour) that
// routine checks may fill when a host has more servers than the caps allow;
// the rest is room for new servers and retries, which come first (rule S4).
const RoutineShare = data.HostMaxPerHour * 5 / 6

// NewReserve is the part of a host's hourly cap that routine checks leave
// to new servers' first checks (retries leave half of it), so that a new
// server is checked within minutes even on a host at its cap (rule S5).
const NewReserve = data.HostMaxPerHour / 12

// stretchUnit is the step of a host's stretch factor: stretches are kept in
// eighths, so a few servers more or less on a host do not move everyone's
// cycles.
const stretchUnit = 8

// slotHash returns the stable hash of a server id that fixes its slot (rule
// S2).
func slotHash(id string) uint64 { return data.StableHash(id, 0x736c6f74) }

// addressSlotHash returns the stable hash of an address (data.AddressKey)
// that fixes the slot of the servers sharing it (rule S2).
func addressSlotHash(rawURL string) uint64 {
	return data.StableHash(data.AddressKey(rawURL), 0x61646472)
}

// SlotOf returns the server's own second of the day (rule S2): an hourly
// server is due at that second's minute and second of every hour, a daily
// one at that second of every day. It depends on the id alone, so a rank
// change moves the cadence, not the minute: the minute of the hour is the
// same in both tiers.
func SlotOf(id string) time.Duration {
	return time.Duration(slotHash(id)%86400) * time.Second
}

// SlotOfAddress returns the second of the day of the servers listed at one
// address (data.AddressKey), as SlotOf does of a server alone at its
// address: the address keeps it whichever of its servers come and go.
func SlotOfAddress(rawURL string) time.Duration {
	return time.Duration(addressSlotHash(rawURL)%86400) * time.Second
}

// LastSlot returns the last instant before t at which server s is due in
// its tier (rule S2), ignoring any stretch: when a planner running all
// along would last have checked it. Benchmarks use it to start in a steady
// state.
func LastSlot(s data.Server, t time.Time) time.Time {
	c := newCadence(slotHash(s.ID), s.Rank, stretchUnit)
	return time.Unix(c.next(t.Unix()-c.tier), 0).UTC()
}

// cadence is when one server's routine checks fall due: at offset seconds
// into each cycle of every seconds, in the cycles its host's stretch selects.
type cadence struct {
	tier    int64 // the tier's cadence in seconds (rule S1)
	offset  int64 // seconds into each cycle (rule S2)
	phase   int64 // which of a stretched host's cycles are this server's
	stretch int64 // in eighths: 8 means every cycle
}

// newCadence returns the cadence of a server of this rank whose slot hash
// is h (slotHash, addressSlotHash), on a host of this stretch.
func newCadence(h uint64, rank int, stretch int64) cadence {
	tier := int64(data.Tier(rank) / time.Second)
	return cadence{
		tier:    tier,
		offset:  int64(h%86400) % tier,
		phase:   int64(h>>40) % (1 << 20),
		stretch: stretch,
	}
}

// every returns the effective cadence in seconds: the tier's, stretched.
func (c cadence) every() int64 { return c.tier * c.stretch / stretchUnit }

// next returns the first instant at or after t (unix seconds) at which a
// routine check of the server falls due. On a stretched host only some
// cycles are the server's: cycle j is when floor(8(j+phase)/stretch) steps
// up, which happens once every stretch/8 cycles, with the phase spreading
// the servers of the host evenly over the cycles.
func (c cadence) next(t int64) int64 {
	j := floorDiv(t-c.offset, c.tier)
	if j*c.tier+c.offset < t {
		j++
	}
	if c.stretch > stretchUnit {
		m := floorDiv(stretchUnit*(j+c.phase-1), c.stretch) + 1
		if k := ceilDiv(m*c.stretch, stretchUnit) - c.phase; k > j {
			j = k
		}
	}
	return j*c.tier + c.offset
}

// hostStretch returns a host's stretch in eighths: 8 when its routine
// demand fits in RoutineShare checks an hour, else enough eighths more that
// it does. demand24 counts an hourly server as 24, a daily one as 1.
func hostStretch(demand24 int64) int64 {
	return max(stretchUnit, ceilDiv(stretchUnit*demand24, 24*RoutineShare))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
