package fleet

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"plug.directory/prober/internal/tlsca"
)

// CAFileName is the name of the fleet CA's PEM certificate in Config.Dir.
const CAFileName = "fleet-ca.pem"

// ca is a throw-away certificate authority, made when a fleet starts and
// trusted only by a check given its file (-ca-file).
type ca struct{ *tlsca.CA }

// newCA makes a CA valid from an hour before now for two days.
func newCA(now time.Time) (*ca, error) {
	c, err := tlsca.New("plug.directory demo fleet CA", now.Add(-time.Hour), now.Add(48*time.Hour))
	if err != nil {
		return nil, fmt.Errorf("make fleet CA: %w", err)
	}
	return &ca{c}, nil
}

// leaf issues a server certificate naming every host of the fleet, valid as
// long as the CA.
func (c *ca) leaf(hosts []string) (tls.Certificate, error) {
	cert, err := c.Leaf(c.Cert.NotBefore, c.Cert.NotAfter, hosts...)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("make fleet server certificate: %w", err)
	}
	return cert, nil
}

// write stores the CA certificate as dir/CAFileName and returns its path.
func (c *ca) write(dir string) (string, error) {
	path := filepath.Join(dir, CAFileName)
	if err := os.WriteFile(path, c.PEM, 0o644); err != nil {
		return "", fmt.Errorf("write fleet CA: %w", err)
	}
	return path, nil
}
