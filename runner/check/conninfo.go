package check

import (
	"context"
	"crypto/tls"
	"net"
	"net/http/httptrace"
	"time"
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
	})
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
