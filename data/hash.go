package data

// StableHash returns a 64-bit hash of s that never changes between builds
// or processes (unlike hash/maphash), cheap enough to compute for every
// server every minute: eight bytes at a time, then a splitmix64 finalizer.
// The planner derives each server's slot from it (rule S2), so changing it
// moves every server's minute.
func StableHash(s string, seed uint64) uint64 {
	h := seed ^ uint64(len(s))*0x9e3779b97f4a7c15
	for len(s) >= 8 {
		h = round(h, word(s))
		s = s[8:]
	}
	return finish(h, s)
}

// StableHashPair returns StableHash(s, a) and StableHash(s, b) in one pass
// over s: the two run side by side, each waiting less on its multiplies.
func StableHashPair(s string, a, b uint64) (uint64, uint64) {
	n := uint64(len(s)) * 0x9e3779b97f4a7c15
	ha, hb := a^n, b^n
	for len(s) >= 8 {
		w := word(s)
		ha, hb = round(ha, w), round(hb, w)
		s = s[8:]
	}
	return finish(ha, s), finish(hb, s)
}

// round mixes the next eight bytes w into h.
func round(h, w uint64) uint64 {
	h = (h ^ w) * 0xff51afd7ed558ccd
	return h ^ h>>32
}

// finish mixes the last bytes, fewer than eight, into h and applies the
// splitmix64 finalizer.
func finish(h uint64, rest string) uint64 {
	var w uint64
	for i := 0; i < len(rest); i++ {
		w |= uint64(rest[i]) << (8 * i)
	}
	h = (h ^ w) * 0xc4ceb9fe1a85ec53
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// word returns the first eight bytes of s, little-endian.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
