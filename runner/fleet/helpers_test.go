package fleet

import (
	"crypto/x509"
	"slices"
)

// Server returns the server with the given id.
func (f *Fleet) Server(id string) (Server, bool) {
	i := slices.IndexFunc(f.servers, func(s Server) bool { return s.ID == id })
	if i < 0 {
		return Server{}, false
	}
	return f.servers[i], true
}

// RootCAs returns a pool holding only the fleet's CA, for the tests' clients.
func (f *Fleet) RootCAs() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(f.ca.Cert)
	return p
}
