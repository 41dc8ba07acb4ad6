package soak

import (
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/runner/check"
	"plug.directory/prober/runner/fleet"
)

// scripted is one server of the table on its own loopback address, whose
// answers and certificate follow its life on the run's clock, and which
// counts the handshakes and requests it received.
type scripted struct {
	life  life
	host  string
	addr  netip.Addr
	certs []leaf // by from

	mu       sync.Mutex
	hellos   int
	requests int
}

// leaf is a certificate a server shows from a moment on.
type leaf struct {
	from     time.Time
	notAfter time.Time
	cert     tls.Certificate
}

// fleetOf starts a scripted server for each life of the table, and returns
// them with the lab setting that reaches them.
func fleetOf(tb testing.TB, r run, now func() time.Time) ([]*scripted, check.Lab) {
	tb.Helper()
	ca := testutil.MustCA(tb)
	lab := check.Lab{Enabled: true, Resolve: map[string]string{}, CAFile: ca.File}
	quit := make(chan struct{})
	tb.Cleanup(func() { close(quit) })
	var out []*scripted
	for _, l := range lives {
		s := &scripted{life: l, host: l.id + ".soak.test"}
		// The first certificate from long before the run; a year's after
		// a renewal a day before the first ends.
		first := r.start.AddDate(1, 0, 0)
		if l.certEnd != 0 {
			first = r.at(l.certEnd)
		}
		s.certs = append(s.certs, leaf{from: testutil.ValidFrom, notAfter: first, cert: ca.MustLeaf(tb, r.start.AddDate(0, -2, 0), first, s.host)})
		if l.certEnd != 0 {
			renewed := first.Add(-24 * time.Hour)
			s.certs = append(s.certs, leaf{from: renewed, notAfter: renewed.AddDate(1, 0, 0), cert: ca.MustLeaf(tb, renewed, renewed.AddDate(1, 0, 0), s.host)})
		}
		handlers := map[int]http.Handler{}
		extras := map[int]map[string]http.Handler{}
		for i, p := range l.phases {
			h, extra, err := fleet.Handler(fleet.Spec{ID: l.id, Host: s.host, Kind: p.kind, Tools: p.tools}, time.Minute, quit, nil)
			if err != nil {
				tb.Fatal(err)
			}
			handlers[i], extras[i] = h, extra
		}
		mux := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			s.mu.Lock()
			s.requests++
			s.mu.Unlock()
			i := s.phaseIndex(r, now())
			if req.URL.Path == "/mcp" {
				handlers[i].ServeHTTP(w, req)
				return
			}
			if h, ok := extras[i][req.URL.Path]; ok {
				h.ServeHTTP(w, req)
				return
			}
			http.NotFound(w, req)
		})
		ln := testutil.ListenLoopback8443(tb)
		s.addr = netip.MustParseAddrPort(ln.Addr().String()).Addr()
		srv := &http.Server{
			Handler:  mux,
			ErrorLog: log.New(io.Discard, "", 0),
			TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				s.mu.Lock()
				s.hellos++
				s.mu.Unlock()
				c := s.leafAt(now())
				return &c.cert, nil
			}},
		}
		go srv.ServeTLS(ln, "", "")
		tb.Cleanup(func() { srv.Close() })
		lab.Resolve[s.host+":8443"] = s.addr.String()
		out = append(out, s)
	}
	return out, lab
}

func (s *scripted) phaseIndex(r run, t time.Time) int {
	i := 0
	for j, p := range s.life.phases {
		if !t.Before(r.at(p.at)) {
			i = j
		}
	}
	return i
}

// leafAt returns the certificate shown at t.
func (s *scripted) leafAt(t time.Time) leaf {
	c := s.certs[0]
	for _, l := range s.certs[1:] {
		if !t.Before(l.from) {
			c = l
		}
	}
	return c
}

func (s *scripted) url() string { return "https://" + s.host + ":8443/mcp" }

func (s *scripted) counts() (hellos, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hellos, s.requests
}
