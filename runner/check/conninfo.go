package check

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http/httptrace"
	"slices"
	"time"

	"plug.directory/prober/data"
)

// ConnInfo is what a check's transcript shows of one of its connections,
// for an owner debugging their server: the address actually dialled and
// the TLS session. It is debugging detail only: results do not keep it.
type ConnInfo struct {
	RemoteAddr   string    // address dialled, "a.b.c.d:port"
	TLSVersion   string    // "TLS 1.3"; "" if not TLS
	ALPN         string    // protocol agreed in the handshake ("http/1.1", "h2"), "" if none
	CipherSuite  string    // e.g. "TLS_AES_128_GCM_SHA256"
	CertSubject  string    // subject of the server's leaf certificate, e.g. "CN=mcp.example.com"
	CertIssuer   string    // its issuer
	CertDNSNames []string  // the names it is valid for
	CertNotAfter time.Time // when it expires
}

// connLog numbers the connections a guard's requests went out on, in the
// order they were first used.
type connLog struct {
	index map[net.Conn]int // connection -> its number, from 1
	infos []ConnInfo
}

// traceConn returns ctx with a trace that records, for ex, the connection
// net/http sends it on (every try: the last one counts). Connection facts
// come from the connection itself once its TLS handshake is done.
func (g *Guard) traceConn(ctx context.Context, ex *Exchange) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if info.Conn == nil {
				return
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			n, ok := g.connLog.index[info.Conn]
			if !ok {
				if g.connLog.index == nil {
					g.connLog.index = make(map[net.Conn]int)
				}
				g.connLog.infos = append(g.connLog.infos, connInfoOf(info.Conn))
				n = len(g.connLog.infos)
				g.connLog.index[info.Conn] = n
			}
			ex.Conn = n
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			t := g.now()
			g.mu.Lock()
			ex.wrote = t
			g.mu.Unlock()
		},
		GotFirstResponseByte: func() {
			t := g.now()
			g.mu.Lock()
			if !ex.wrote.IsZero() {
				ex.FirstByte = max(t.Sub(ex.wrote), 1) // an answer came: never 0, which means none
			}
			g.mu.Unlock()
		},
	})
}

// noteTLS keeps what the first handshake of the check that got as far as
// the server's certificate saw of it (Record.TLS): from the session when
// it completed, else, when the certificate failed verification, from the
// certificate the server sent, so that an expired one is described too.
func (g *Guard) noteTLS(tc *tls.Conn, err error) {
	var leaf *x509.Certificate
	var version string
	st := tc.ConnectionState()
	var verr *tls.CertificateVerificationError
	switch {
	case err == nil && len(st.PeerCertificates) > 0:
		leaf, version = st.PeerCertificates[0], tls.VersionName(st.Version)
	case errors.As(err, &verr) && len(verr.UnverifiedCertificates) > 0:
		leaf = verr.UnverifiedCertificates[0]
		if st.Version != 0 {
			version = tls.VersionName(st.Version)
		}
	default:
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tls == nil {
		g.tls = &data.TLSInfo{Version: version, NotAfter: leaf.NotAfter.UTC(), Issuer: leaf.Issuer.String(), Names: slices.Clone(leaf.DNSNames)}
	}
}

// connInfoOf reads the facts of c.
func connInfoOf(c net.Conn) ConnInfo {
	var ci ConnInfo
	if a := c.RemoteAddr(); a != nil {
		ci.RemoteAddr = a.String()
	}
	tc, ok := c.(interface{ ConnectionState() tls.ConnectionState }) // a *reqConn
	if !ok {
		return ci
	}
	st := tc.ConnectionState()
	if !st.HandshakeComplete {
		return ci
	}
	ci.TLSVersion = tls.VersionName(st.Version)
	ci.ALPN = st.NegotiatedProtocol
	ci.CipherSuite = tls.CipherSuiteName(st.CipherSuite)
	if len(st.PeerCertificates) > 0 {
		leaf := st.PeerCertificates[0]
		ci.CertSubject = leaf.Subject.String()
		ci.CertIssuer = leaf.Issuer.String()
		ci.CertDNSNames = leaf.DNSNames
		ci.CertNotAfter = leaf.NotAfter.UTC()
	}
	return ci
}
