package testutil

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

// RandomLoopback returns a random 127.a.b.c with b and c in 1..254.
func RandomLoopback() netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(rand.IntN(256)), byte(1 + rand.IntN(254)), byte(1 + rand.IntN(254))})
}

// Listen8443 listens on 127.a.b.c:8443 for a random a.b.c, trying another
// address while one is in use (the packages' tests run in parallel, and a
// lab farm holds many). It fails on any other error, or after 200 tries.
// Child processes of tests, which have no testing.TB, call it directly.
func Listen8443() (net.Listener, error) {
	var lastErr error
	for range 200 {
		ln, err := net.Listen("tcp4", netip.AddrPortFrom(RandomLoopback(), 8443).String())
		if err == nil {
			return ln, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("listen on a loopback :8443: %w", lastErr)
}

// ListenLoopback8443 is Listen8443 for a test: the listener is closed when
// the test ends, and an error fails the test.
func ListenLoopback8443(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := Listen8443()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return ln
}
