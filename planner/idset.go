package planner

// idSet is the ids of the servers whose state a plan reads, asked of
// every state stored, a million a minute: a bit per cheap hash of the id
// answers most of them without the map (one in about sixty asks it in
// vain).
type idSet struct {
	bits  []uint64
	shift uint // 64 - log2 of the bits
	ids   map[string]struct{}
}

func newIDSet(n int) *idSet {
	logBits := uint(12)
	for logBits < 24 && 1<<logBits < 64*n {
		logBits++
	}
	return &idSet{bits: make([]uint64, 1<<logBits/64), shift: 64 - logBits, ids: make(map[string]struct{}, n)}
}

// bit returns the bit of id: a mix of its length and of its first and last
// eight bytes, which tell apart ids that share a prefix or a suffix.
func (s *idSet) bit(id string) uint64 {
	var head, tail uint64
	if len(id) >= 8 {
		head, tail = word(id), word(id[len(id)-8:])
	} else {
		for i := 0; i < len(id); i++ {
			head |= uint64(id[i]) << (8 * i)
		}
	}
	return ((head^uint64(len(id)))*0x9e3779b97f4a7c15 ^ tail*0xc2b2ae3d27d4eb4f) >> s.shift
}

// word returns the first eight bytes of s, little-endian.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func (s *idSet) add(id string) {
	b := s.bit(id)
	s.bits[b/64] |= 1 << (b % 64)
	s.ids[id] = struct{}{}
}

func (s *idSet) has(id string) bool {
	if b := s.bit(id); s.bits[b/64]&(1<<(b%64)) == 0 {
		return false
	}
	_, ok := s.ids[id]
	return ok
}
