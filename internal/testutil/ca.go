package testutil

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/internal/tlsca"
)

// CA is a throw-away certificate authority for lab TLS servers; File is its
// PEM certificate, for Lab.CAFile or -ca-file.
type CA struct {
	*tlsca.CA
	File string
}

// ValidFrom and ValidUntil bound a test CA's validity: wide enough for any
// clock a test injects (a simulated day verifies its chain as that day,
// tls.Config.Time), so only a leaf's own dates decide a test's outcome.
var (
	ValidFrom  = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
	ValidUntil = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
)

// MustCA makes a CA valid from ValidFrom to ValidUntil and writes its
// certificate to a file in tb.TempDir(); it fails the test on error.
func MustCA(tb testing.TB) *CA {
	tb.Helper()
	c, err := tlsca.New("prober test CA", ValidFrom, ValidUntil)
	if err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(tb.TempDir(), "ca.pem")
	if err := os.WriteFile(file, c.PEM, 0o600); err != nil {
		tb.Fatalf("write CA file: %v", err)
	}
	return &CA{CA: c, File: file}
}

// MustLeaf issues a server certificate for names, valid from notBefore to
// notAfter; it fails the test on error.
func (c *CA) MustLeaf(tb testing.TB, notBefore, notAfter time.Time, names ...string) tls.Certificate {
	tb.Helper()
	cert, err := c.Leaf(notBefore, notAfter, names...)
	if err != nil {
		tb.Fatal(err)
	}
	return cert
}
