// Package testutil holds the fixtures the tests of several packages share,
// in the manner of litestream's internal/testingutil: a throw-away CA
// (MustCA), a listener on a random loopback 127.a.b.c:8443
// (ListenLoopback8443) and golden files (Golden, with -update). Only tests
// import it.
package testutil
