package check

import (
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
)

// Lab is the lab setting, off by default, for tests and demos against local
// servers. It only ever adds loopback (127.0.0.0/8): private ranges stay
// refused, and ports stay 443 and 8443, so many lab servers listen on
// 127.0.0.N:8443 without root.
type Lab struct {
	Enabled bool              // also allow loopback 127.0.0.0/8 targets
	Resolve map[string]string // "host:port" -> "127.x.y.z" (like curl --resolve); lab only
	CAFile  string            // extra trusted CA certificates (PEM file); lab only
}

// RegisterFlags defines -lab, -resolve host:port:addr (repeatable, like curl)
// and -ca-file on fs, storing into l. A -resolve value that is not
// host:port:addr with a 127.0.0.0/8 address is a flag error.
func (l *Lab) RegisterFlags(fs *flag.FlagSet) {
	fs.BoolVar(&l.Enabled, "lab", l.Enabled, "lab setting: also allow loopback targets (127.0.0.0/8 only)")
	fs.Func("resolve", "lab: `host:port:addr` sends host:port to the loopback addr (repeatable, like curl)", func(v string) error {
		key, addr, err := parseResolve(v)
		if err != nil {
			return err
		}
		if l.Resolve == nil {
			l.Resolve = make(map[string]string)
		}
		l.Resolve[key] = addr
		return nil
	})
	fs.StringVar(&l.CAFile, "ca-file", l.CAFile, "lab: `file` of extra trusted CA certificates (PEM)")
}

// parseResolve splits a curl-style host:port:addr into the "host:port" key
// and the address.
func parseResolve(v string) (key, addr string, err error) {
	i := strings.LastIndex(v, ":")
	if i < 0 {
		return "", "", fmt.Errorf("parse resolve %q: want host:port:addr", v)
	}
	key, addr = v[:i], v[i+1:]
	if _, _, err := net.SplitHostPort(key); err != nil {
		return "", "", fmt.Errorf("parse resolve %q: want host:port:addr: %w", v, err)
	}
	if err := checkLabAddr(addr); err != nil {
		return "", "", fmt.Errorf("parse resolve %q: %w", v, err)
	}
	return strings.ToLower(key), addr, nil
}

// checkLabAddr accepts only a loopback IPv4 address.
func checkLabAddr(s string) error {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return fmt.Errorf("parse address %q: %w", s, err)
	}
	if !a.Is4() || !loopbackIPv4.Contains(a) {
		return fmt.Errorf("address %s is not in 127.0.0.0/8", s)
	}
	return nil
}

// errLabOff is returned by Validate when a lab-only option is set without
// the lab setting.
var errLabOff = errors.New("-resolve and -ca-file need -lab")

// Validate reports an error when Resolve or CAFile is set without Enabled, or
// when a Resolve entry is not "host:port" -> a 127.0.0.0/8 address.
func (l Lab) Validate() error {
	if !l.Enabled && (len(l.Resolve) > 0 || l.CAFile != "") {
		return fmt.Errorf("validate lab setting: %w", errLabOff)
	}
	keys := make([]string, 0, len(l.Resolve))
	for k := range l.Resolve {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, _, err := net.SplitHostPort(k); err != nil {
			return fmt.Errorf("validate lab resolve %q: %w", k, err)
		}
		if err := checkLabAddr(l.Resolve[k]); err != nil {
			return fmt.Errorf("validate lab resolve %q: %w", k, err)
		}
	}
	return nil
}

// normalized returns l with its own copy of Resolve, keys lowercased, so
// host names match whatever case a URL uses.
func (l Lab) normalized() Lab {
	if l.Resolve == nil {
		return l
	}
	m := make(map[string]string, len(l.Resolve))
	for k, v := range l.Resolve {
		m[strings.ToLower(k)] = v
	}
	l.Resolve = m
	return l
}

// resolve returns the lab override for host:port, if any.
func (l Lab) resolve(host, port string) (netip.Addr, bool) {
	if !l.Enabled || len(l.Resolve) == 0 {
		return netip.Addr{}, false
	}
	s, ok := l.Resolve[strings.ToLower(net.JoinHostPort(host, port))]
	if !ok {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a, true
}

// rootCAs returns the system roots plus the lab CA file, or nil (system
// roots) when no CA file is set. It fails when the file cannot be read or
// holds no certificate. Pools are cached by file content: a check's guard
// re-reads the file but does not copy and re-parse the system roots.
func (l Lab) rootCAs() (*x509.CertPool, error) {
	if l.CAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(l.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read lab CA file: %w", err)
	}
	key := sha256.Sum256(pem)
	if pool, ok := rootPools.Load(key); ok {
		return pool.(*x509.CertPool), nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("read lab CA file %s: no PEM certificate", l.CAFile)
	}
	rootPools.Store(key, pool)
	return pool, nil
}

// rootPools caches lab root pools by the SHA-256 of the CA file's content.
// Pools are never modified once stored.
var rootPools sync.Map
