package check

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"plug.directory/prober/data"
)

// dialTLS is the transport's DialTLSContext and its only way out (rules
// N6, N7, N11): port 443 or 8443, the lab override or a lookup of the name
// (candidates), then, address by address, a TCP connection (connect) and
// the TLS handshake (handshake), checked on the very address dialled so
// DNS rebinding and redirects cannot get around it. Each address but the
// last gets an equal share of the time left for both, so one that never
// answers, or accepts TCP and then stalls the handshake, cannot eat the
// check (rule N10); an address that answered the handshake with a TLS
// error (a certificate, an alert) has answered: its error is the check's.
// Every connect counts against maxConnsPerCheck, every connection is
// tracked so Close can end it, and a dial for a request already written
// is refused unless it may go once more (attempt.again).
func (g *Guard) dialTLS(ctx context.Context, _, addr string) (net.Conn, error) {
	if a := attemptOf(ctx); a != nil && !a.mayDial() {
		return nil, errNotResent
	}
	if gerr := g.ended(); gerr != nil {
		return nil, gerr
	}
	// Close (and the N10 timer) end lookups and dials in flight too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(g.ctx, cancel)
	defer stop()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &GuardError{Kind: ErrTargetNotAllowed, Rule: "N7", Detail: data.DetailNoAddress, Err: err}
	}
	if !allowedPort(port) {
		return nil, &GuardError{Kind: ErrTargetNotAllowed, Rule: "N7", Detail: data.DetailPort}
	}
	addrs, err := g.candidates(ctx, host, port)
	if err != nil {
		if gerr := g.ended(); gerr != nil {
			return nil, gerr
		}
		return nil, err
	}
	var errs []error
	for i, ap := range addrs {
		if err := g.countDial(); err != nil {
			errs = append(errs, err)
			break
		}
		actx, cancel := g.share(ctx, len(addrs)-i)
		c, err := g.connect(actx, ap, host)
		cancel()
		if err == nil {
			return c, nil
		}
		if local := localFailure(err, g.cfg.SourceAddr); local != nil {
			return nil, local
		}
		if kind, _ := g.classify(err, nil); kind == ErrTLSCert || kind == ErrTLSOther {
			return nil, err
		}
		g.mu.Lock()
		g.unreachable[ap.Addr()] = true
		g.mu.Unlock()
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if gerr := g.ended(); gerr != nil {
		return nil, gerr
	}
	return nil, errors.Join(errs...)
}

// candidates returns the addresses a connection to host:port may try, in
// order: those allowed (rule N6: public IPv4, lab: or loopback; never an
// IPv6 address, IPv4-mapped ones included), an address that failed earlier
// in the check last, so a later connection does not wait for it again.
func (g *Guard) candidates(ctx context.Context, host, port string) ([]netip.AddrPort, error) {
	addrs, err := g.lookup(ctx, host, port)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.ParseUint(port, 10, 16)
	var allowed, failed []netip.AddrPort
	g.mu.Lock()
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(p))
		switch {
		case !allowedAddr(a, g.cfg.Lab):
		case g.unreachable[a]:
			failed = append(failed, ap)
		default:
			allowed = append(allowed, ap)
		}
	}
	g.mu.Unlock()
	allowed = append(allowed, failed...)
	if len(allowed) == 0 {
		return nil, &GuardError{Kind: ErrNoPublicAddr, Rule: "N6",
			Detail: fmt.Sprintf("%s resolves to no public IPv4 address", host)}
	}
	return allowed, nil
}

// connect opens one connection to ap within ctx (the address's share): the
// TCP connect, then the TLS handshake for host.
func (g *Guard) connect(ctx context.Context, ap netip.AddrPort, host string) (net.Conn, error) {
	c, err := g.dialAddr(ctx, ap)
	if err != nil {
		return nil, err
	}
	wc, err := g.track(c)
	if err != nil {
		return nil, err
	}
	return g.handshake(ctx, wc, host)
}

// handshake runs the TLS handshake on wc (rule N7), within ctx and at most
// tlsHandshakeTimeout, offering HTTP/1.1 only (see docs/check.md: the HTTP/2
// client resends and reads below any wrapper), and returns the connection
// net/http is handed.
func (g *Guard) handshake(ctx context.Context, wc *wireConn, host string) (net.Conn, error) {
	cfg := g.tlsConfig.Clone()
	cfg.ServerName = host
	cfg.NextProtos = []string{"http/1.1"}
	tc := tls.Client(wc, cfg)
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	hs := g.now()
	err := tc.HandshakeContext(hctx)
	g.addPhase(&g.timing.TLS, hs)
	g.noteTLS(tc, err)
	if err != nil {
		wc.Close()
		if gerr := g.ended(); gerr != nil {
			return nil, gerr
		}
		return nil, fmt.Errorf("tls handshake with %s: %w", wc.RemoteAddr(), err)
	}
	g.mu.Lock()
	g.wire.Handshakes++
	g.mu.Unlock()
	return &reqConn{Conn: tc, wire: wc}, nil
}

// share returns ctx bounded to 1/n of the check's time left: the time of
// one of the n addresses still to try. The last one gets all that is left.
func (g *Guard) share(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	if n <= 1 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(g.deadline)/time.Duration(n))
}

// bindSource checks that src (rule N11) is an address of this machine by
// binding a socket to it, which sends no packet: a source address the
// machine does not own fails here, at start, rather than every check
// failing to connect.
func bindSource(src netip.Addr) error {
	if !src.IsValid() {
		return nil
	}
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: src.AsSlice()})
	if err != nil {
		return fmt.Errorf("bind source address %s: %w", src, err)
	}
	return ln.Close()
}

// localFailure recognises a connect that failed on the prober's side: the
// source address could not be bound (it was removed from the machine, or
// its ports are used up), or no socket could be opened (too many open
// files). That is never the server's fault.
func localFailure(err error, src netip.Addr) *GuardError {
	var sysErr *os.SyscallError
	syscallName := ""
	if errors.As(err, &sysErr) {
		syscallName = sysErr.Syscall
	}
	switch {
	case syscallName == "bind", errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EADDRINUSE):
		detail := "prober error: cannot connect from source address " + src.String()
		if !src.IsValid() {
			detail = "prober error: no local address to connect from"
		}
		return &GuardError{Kind: ErrLocal, Detail: detail, Err: err}
	case syscallName == "socket", errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE), errors.Is(err, syscall.ENOBUFS):
		return &GuardError{Kind: ErrLocal, Detail: "prober error: cannot open a socket", Err: err}
	}
	return nil
}

// reasonDNSNoAddress is the detail of a name the resolver found no address
// for. net's resolver reports a name that does not exist (NXDOMAIN) and one
// without A and AAAA records (NODATA) alike (errNoSuchHost, IsNotFound, no
// rcode), so the reason says both.
const reasonDNSNoAddress = "DNS: name not found or has no address"

// LookupIP returns a GuardConfig.Resolver asking r for the A records of a
// name and, only when it has none, for all its addresses, so that a name
// with only AAAA records (an IPv6-only server) is told from one without
// any: the first is not checkable (rule N6), the second failing. A records
// come back as IPv4 addresses, AAAA records as IPv6 ones whatever they
// hold: an AAAA record holding an IPv4-mapped address (::ffff:a.b.c.d) is
// an IPv6 record and never dialled. The A records are asked apart because
// net's resolver, asked for both, may return A records in the mapped form
// too (its cgo path does), and asked for AAAA only ("ip6") drops mapped
// ones, which would make such a name look as if it did not exist.
func LookupIP(r *net.Resolver) func(ctx context.Context, host string) ([]netip.Addr, error) {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		v4, err := r.LookupNetIP(ctx, "ip4", host)
		if err == nil && len(v4) > 0 {
			for i, a := range v4 {
				v4[i] = a.Unmap() // an A record is IPv4 in whatever form net returns it
			}
			return v4, nil
		}
		all, err := r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		for i, a := range all {
			all[i] = netip.AddrFrom16(a.As16()) // no A record: these are AAAA records, IPv6 mapped or not
		}
		return all, nil
	}
}

// lookup returns the candidate addresses of host: the lab override, the IP
// literal itself, or the resolver's answer.
func (g *Guard) lookup(ctx context.Context, host, port string) ([]netip.Addr, error) {
	if a, ok := g.cfg.Lab.resolve(host, port); ok {
		return []netip.Addr{a}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	resolve := g.cfg.Resolver
	if resolve == nil {
		resolve = LookupIP(net.DefaultResolver)
	}
	defer g.addPhase(&g.timing.DNS, g.now())
	addrs, err := resolve(ctx, host)
	if err != nil {
		var dnsErr *net.DNSError
		switch {
		case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			return nil, &GuardError{Kind: ErrDNSNotFound, Detail: reasonDNSNoAddress, Err: err}
		case errors.As(err, &dnsErr) && dnsErr.IsTimeout, errors.Is(err, context.DeadlineExceeded):
			return nil, &GuardError{Kind: ErrTimeout, Detail: "DNS: timed out", Err: err}
		}
		return nil, &GuardError{Kind: ErrDNS, Detail: "DNS: lookup failed", Err: err}
	}
	return addrs, nil
}

// dialAddr connects to an address already checked by candidates.
func (g *Guard) dialAddr(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	defer g.addPhase(&g.timing.Connect, g.now())
	if g.cfg.DialContext != nil {
		return g.cfg.DialContext(ctx, "tcp4", ap.String())
	}
	d := net.Dialer{
		// Belt and braces: the socket-level address is checked once more
		// just before connect.
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			got, err := netip.ParseAddrPort(address)
			if err != nil || !allowedAddr(got.Addr().Unmap(), g.cfg.Lab) || !allowedPort(strconv.Itoa(int(got.Port()))) {
				return &GuardError{Kind: ErrNoPublicAddr, Rule: "N6", Detail: "dialled address " + address + " not allowed"}
			}
			return nil
		},
	}
	if g.cfg.SourceAddr.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: g.cfg.SourceAddr.AsSlice()}
	}
	return d.DialContext(ctx, "tcp4", ap.String())
}

// track registers c so Close can end it, and counts it.
func (g *Guard) track(c net.Conn) (*wireConn, error) {
	wc := newWireConn(g, c)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.Close()
		if g.expired {
			return nil, &GuardError{Kind: ErrTimeout, Rule: "N10", Detail: noAnswerIn(g.cfg.Timeout)}
		}
		return nil, &GuardError{Kind: ErrCanceled, Detail: "check already ended"}
	}
	g.conns[wc] = struct{}{}
	g.wire.Conns++
	return wc, nil
}

// classify decides the ErrKind of a failure where it happened: the guard's
// own refusals, DNS, connection, TLS and deadline errors. req, when not nil,
// is the request whose context may have ended.
func (g *Guard) classify(err error, req *http.Request) (ErrKind, string) {
	var gerr *GuardError
	if errors.As(err, &gerr) {
		return gerr.Kind, gerr.Detail
	}
	// Whatever broke once the N10 deadline closed everything broke because of it.
	if e := g.ended(); e != nil && e.Kind == ErrTimeout {
		return e.Kind, e.Detail
	}
	var (
		dnsErr   *net.DNSError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		unknown  x509.UnknownAuthorityError
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
		record   tls.RecordHeaderError
		netErr   net.Error
	)
	switch {
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return ErrDNSNotFound, reasonDNSNoAddress
		}
		if dnsErr.IsTimeout {
			return ErrTimeout, "DNS: timed out"
		}
		return ErrDNS, "DNS: lookup failed"
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			// crypto/x509 says "current time T is before NotBefore" for a
			// certificate not valid yet, "... is after NotAfter" otherwise.
			if strings.Contains(invalid.Detail, " is before ") {
				return ErrTLSCert, "certificate is not yet valid"
			}
			return ErrTLSCert, "certificate has expired"
		}
		return ErrTLSCert, "certificate is not valid"
	case errors.As(err, &hostname):
		return ErrTLSCert, "certificate is for another name"
	case errors.As(err, &unknown):
		return ErrTLSCert, "certificate signed by unknown authority"
	case errors.As(err, &verify):
		return ErrTLSCert, "certificate not trusted"
	case errors.Is(err, context.DeadlineExceeded),
		req != nil && errors.Is(req.Context().Err(), context.DeadlineExceeded):
		return ErrTimeout, "timed out"
	case errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout, "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrRefused, "connection refused"
	case errors.As(err, &alert), errors.As(err, &record):
		return ErrTLSOther, "TLS handshake failed"
	case errors.Is(err, context.Canceled):
		return ErrCanceled, "canceled"
	case headersTooLarge(err):
		return ErrTooLarge, "answer headers over 64 KB"
	}
	// The detail follows "connection failed: " in results: never that
	// phrase again.
	detail := "network error"
	var errno syscall.Errno
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		detail = "connection reset by the server"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		detail = "closed by the server"
	case errors.As(err, &errno):
		detail = errno.Error() // "no route to host", "network is unreachable"
	}
	if e := g.ended(); e != nil {
		return e.Kind, e.Detail
	}
	return ErrNetwork, detail
}

// headersTooLarge recognises net/http's refusal of headers over
// MaxResponseHeaderBytes. net/http has no typed error for it (HTTP/1.1:
// "server response headers exceeded N bytes", HTTP/2 sometimes "header list
// larger than advertised limit", sometimes a bare PROTOCOL_ERROR), so this
// one classification reads the error text; TestHeaderLimit pins it.
func headersTooLarge(err error) bool {
	s := err.Error()
	return strings.Contains(s, "server response headers exceeded") || strings.Contains(s, "header list larger than")
}
