// Package testutil holds the fixtures the tests of several packages share,
// in the manner of litestream's internal/testingutil: a throw-away CA
// (MustCA), a listener on a random loopback 127.a.b.c:8443
// (ListenLoopback8443), golden files (Golden, with -update), the
// benchmarks' peak-memory samplers (SamplePeak; HeapPeak, which reads at
// each collection's end only), the RAM disk of a short run's temporary
// files (ShortInMemory), and headless Chromium driven over the DevTools
// protocol (MustBrowser) with axe-core (MustAxe, installed by
// npm from the lock file in browser/), which check published pages in a
// phone's window and a desktop's (CheckPages). Only tests import it.
package testutil
