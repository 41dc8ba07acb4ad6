package site

import (
	"sync"
	"sync/atomic"
)

// A row keeps the protocol version its server last spoke as a number, not
// a string: the collector follows every pointer of a million rows at each
// cycle, and a version is one of a handful of dates. The numbers are the
// process's: a record keeps the versions themselves.
var protocolVersions struct {
	mu      sync.Mutex
	numbers map[string]uint32
	names   atomic.Pointer[[]string] // by number, 0 is ""; replaced whole when one is added
}

// protocolNumber returns the number of the protocol version v.
func protocolNumber(v string) uint32 {
	if v == "" {
		return 0
	}
	t := &protocolVersions
	t.mu.Lock()
	defer t.mu.Unlock()
	if n, ok := t.numbers[v]; ok {
		return n
	}
	names := []string{""}
	if p := t.names.Load(); p != nil {
		names = *p
	} else {
		t.numbers = map[string]uint32{}
	}
	n := uint32(len(names))
	names = append(names[:n:n], v)
	t.names.Store(&names)
	t.numbers[v] = n
	return n
}

// protocolName returns the protocol version numbered n.
func protocolName(n uint32) string {
	if n == 0 {
		return ""
	}
	return (*protocolVersions.names.Load())[n]
}

// protocolCache numbers the versions of the rows of a record as they are
// read, the last few seen without taking the table's lock.
type protocolCache struct {
	names   [8]string
	numbers [8]uint32
	n       int
}

// number returns protocolNumber(v).
func (c *protocolCache) number(v string) uint32 {
	for i := range c.n {
		if c.names[i] == v {
			return c.numbers[i]
		}
	}
	n := protocolNumber(v)
	if c.n < len(c.names) {
		c.names[c.n], c.numbers[c.n] = v, n
		c.n++
	}
	return n
}
