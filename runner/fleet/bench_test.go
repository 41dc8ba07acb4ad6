package fleet

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkStart starts and stops the test fleet (7 servers on 6 hosts):
// the demo's start-up cost. Compare with BenchmarkStartBaseline.
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		f, err := Start(Config{Servers: testSpecs(), Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartBaseline is the least such a fleet can cost: a CA and one
// certificate, and one httptest TLS server per host answering 204.
func BenchmarkStartBaseline(b *testing.B) {
	hosts := map[string]bool{}
	for _, s := range testSpecs() {
		hosts[s.Host] = true
	}
	var names []string
	for h := range hosts {
		names = append(names, h)
	}
	for b.Loop() {
		authority, err := newCA(time.Now())
		if err != nil {
			b.Fatal(err)
		}
		cert, err := authority.leaf(names)
		if err != nil {
			b.Fatal(err)
		}
		var srvs []*httptest.Server
		for range names {
			s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}))
			s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
			s.StartTLS()
			srvs = append(srvs, s)
		}
		for _, s := range srvs {
			s.Close()
		}
	}
}
