package data

import (
	"strings"
	"testing"
)

// TestStableHash pins the hash: the planner derives each server's slot
// from it (rule S2), so a change would move every server's minute.
func TestStableHash(t *testing.T) {
	for _, c := range []struct {
		s    string
		seed uint64
		want uint64
	}{
		{"", 0x686f7374, 0xf958b4f38227bf15},
		{"", 0x6e616d65, 0xa9073f1a868032f4},
		{"a", 0x686f7374, 0x121d226013984732},
		{"example.com", 0x686f7374, 0x8caff2916d5a327},
		{"mcp.example.com", 0x6e616d65, 0x76d4ec229f36ae49},
		{"https://mcp.example.com/mcp", 0x686f7374, 0xae5d201569774784},
		{"abcdefgh", 0x6e616d65, 0x3cd21201672a7840},
		{"abcdefghi", 0x686f7374, 0xf8aafa29925f9ce4},
	} {
		if got := StableHash(c.s, c.seed); got != c.want {
			t.Errorf("StableHash(%q, %#x) = %#x, want %#x", c.s, c.seed, got, c.want)
		}
	}
}

// TestStableHashPair: the pair is the two hashes, at every length around
// the eight-byte rounds.
func TestStableHashPair(t *testing.T) {
	const a, b = 0x686f7374, 0x6e616d65
	s := strings.Repeat("mcp-0.example.com/", 3)
	for n := range len(s) + 1 {
		ha, hb := StableHashPair(s[:n], a, b)
		if wa, wb := StableHash(s[:n], a), StableHash(s[:n], b); ha != wa || hb != wb {
			t.Errorf("StableHashPair(%q) = %#x, %#x, want %#x, %#x", s[:n], ha, hb, wa, wb)
		}
	}
}
