package planner

import (
	"fmt"
	"testing"
)

// TestIDSet: the set holds exactly the ids added, whatever they share, and
// its bits spare the map nearly every id not added.
func TestIDSet(t *testing.T) {
	s := newIDSet(1000)
	for i := range 1000 {
		s.add(fmt.Sprintf("srv-%07d", 3*i))
	}
	s.add("")
	s.add("a")
	vain := 0
	for i := range 30_000 {
		id := fmt.Sprintf("srv-%07d", i)
		if got, want := s.has(id), i%3 == 0 && i < 3000; got != want {
			t.Fatalf("has(%q) = %v, want %v", id, got, want)
		}
		if b := s.bit(id); i%3 != 0 && s.bits[b/64]&(1<<(b%64)) != 0 {
			vain++
		}
	}
	if !s.has("") || !s.has("a") || s.has("b") || s.has("srv-") {
		t.Error("short ids: wrong answers")
	}
	if vain > 20_000/20 {
		t.Errorf("%d of 20,000 ids not added pass the bits, want at most a twentieth", vain)
	}
}
