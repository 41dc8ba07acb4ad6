package fleet

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Port is the port every fleet host listens on: one the check may connect
// to (rule N7) that needs no privilege.
const Port = 8443

// DefaultRetryAfter is what RateLimited servers ask for when
// Config.RetryAfter is zero.
const DefaultRetryAfter = 2 * time.Minute

// Spec is one server of a fleet.
type Spec struct {
	ID    string   // server id, also the name the go-sdk server gives itself
	Host  string   // lowercase hostname, e.g. "modern.demo.test"; specs with one host share its address
	Path  string   // path of the MCP endpoint; "" means "/mcp"
	Kind  Kind     // how it behaves
	Tools []string // tool names of a go-sdk server; nil means one tool, "hello"
	// What a go-sdk server says of itself for people in its serverInfo
	// (title, description, websiteUrl); "" says nothing.
	Title, Description, Website string
}

func (s Spec) path() string { return cmp.Or(s.Path, "/mcp") }

func (s Spec) tools() []string {
	if s.Tools == nil {
		return []string{"hello"}
	}
	return s.Tools
}

// URL returns the server's address: https://Host:8443/Path.
func (s Spec) URL() string { return fmt.Sprintf("https://%s:%d%s", s.Host, Port, s.path()) }

// Config configures a fleet.
type Config struct {
	Servers    []Spec
	Dir        string           // existing directory the CA certificate is written to (CAFileName)
	RetryAfter time.Duration    // what RateLimited servers ask for; 0 means DefaultRetryAfter
	Now        func() time.Time // nil means time.Now; dates the CA and certificate
	Logger     *slog.Logger     // nil means no logs

	// Listen opens a host's listener ("tcp4", "127.0.0.N:8443"); nil means
	// net.Listen. Tests inject a system that has only 127.0.0.1.
	Listen func(network, addr string) (net.Listener, error)
}

// Validate reports the first thing wrong with c: no servers, no
// directory, an id, host, path or kind missing or repeated.
func (c Config) Validate() error {
	if len(c.Servers) == 0 {
		return errors.New("fleet: no servers")
	}
	if c.Dir == "" {
		return errors.New("fleet: no directory for the CA certificate")
	}
	if c.RetryAfter < 0 {
		return fmt.Errorf("fleet: retry-after %v below zero", c.RetryAfter)
	}
	ids, urls := map[string]bool{}, map[string]bool{}
	for i, s := range c.Servers {
		switch {
		case s.ID == "":
			return fmt.Errorf("fleet: server %d has no id", i+1)
		case ids[s.ID]:
			return fmt.Errorf("fleet: server %q listed twice", s.ID)
		case !validHost(s.Host):
			return fmt.Errorf("fleet: server %q: host %q is not a lowercase hostname", s.ID, s.Host)
		case !strings.HasPrefix(s.path(), "/"):
			return fmt.Errorf("fleet: server %q: path %q does not start with /", s.ID, s.Path)
		case urls[s.URL()]:
			return fmt.Errorf("fleet: server %q: address %s already taken", s.ID, s.URL())
		case !slices.Contains(Kinds, s.Kind):
			return fmt.Errorf("fleet: server %q: unknown kind %q", s.ID, s.Kind)
		}
		ids[s.ID], urls[s.URL()] = true, true
	}
	return nil
}

func validHost(h string) bool {
	if h == "" || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || net.ParseIP(h) != nil {
		return false
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Server is one running server of a fleet.
type Server struct {
	Spec
	URL  string         // https://Host:8443/Path
	Addr netip.AddrPort // where its host listens
}

// Fleet is a running fleet. Close stops it.
type Fleet struct {
	servers []Server
	resolve map[string]string // "host:8443" -> "127.0.0.N"
	caFile  string
	ca      *ca
	quit    chan struct{}
	https   []*http.Server
	rec     map[string]*recorder
	done    sync.WaitGroup
	once    sync.Once
}

// Start starts every server of cfg: one TLS listener per host on the first
// free 127.0.0.N:8443 from 127.0.0.2 up (an address in use is skipped), a
// fresh CA written to cfg.Dir, and one certificate naming every host. Where
// the system has only 127.0.0.1 (macOS without aliases), the hosts share
// 127.0.0.1:8443 and are told apart by name. It fails when cfg does not
// validate or no address can be had; nothing is left running then.
func Start(cfg Config) (*Fleet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	retryAfter := cmp.Or(cfg.RetryAfter, DefaultRetryAfter)
	listen := net.Listen
	if cfg.Listen != nil {
		listen = cfg.Listen
	}

	authority, err := newCA(now())
	if err != nil {
		return nil, err
	}
	caFile, err := authority.write(cfg.Dir)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, s := range cfg.Servers {
		if !slices.Contains(hosts, s.Host) {
			hosts = append(hosts, s.Host)
		}
	}
	cert, err := authority.leaf(hosts)
	if err != nil {
		return nil, err
	}

	f := &Fleet{
		resolve: map[string]string{},
		caFile:  caFile,
		ca:      authority,
		quit:    make(chan struct{}),
		rec:     map[string]*recorder{},
	}
	// One listener and mux per address; hosts are told apart by name
	// (ServeMux host patterns), so hosts may share a listener.
	type listener struct {
		ln  net.Listener
		mux *http.ServeMux
	}
	var lns []*listener
	byHost := map[string]*listener{}
	var shared *listener
	closeAll := func() {
		for _, l := range lns {
			l.ln.Close()
		}
	}
	next := 2
	for _, h := range hosts {
		ln, n, err := listenFrom(listen, next)
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			if shared == nil {
				sln, serr := listen("tcp4", fmt.Sprintf("127.0.0.1:%d", Port))
				if serr != nil {
					closeAll()
					return nil, fmt.Errorf("start fleet host %s: %w (and 127.0.0.1: %w)", h, err, serr)
				}
				shared = &listener{ln: sln, mux: http.NewServeMux()}
				lns = append(lns, shared)
			}
			byHost[h] = shared
		} else if err != nil {
			closeAll()
			return nil, fmt.Errorf("start fleet host %s: %w", h, err)
		} else {
			next = n + 1
			l := &listener{ln: ln, mux: http.NewServeMux()}
			lns = append(lns, l)
			byHost[h] = l
		}
		ap := netip.MustParseAddrPort(byHost[h].ln.Addr().String())
		f.resolve[fmt.Sprintf("%s:%d", h, Port)] = ap.Addr().String()
	}

	for _, s := range cfg.Servers {
		l := byHost[s.Host]
		srv := Server{Spec: s, URL: s.URL(), Addr: netip.MustParseAddrPort(l.ln.Addr().String())}
		h, extra, err := Handler(s, retryAfter, f.quit, logger.With("server", s.ID))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("start fleet server %s: %w", s.ID, err)
		}
		rec := &recorder{next: h}
		f.rec[s.ID] = rec
		l.mux.Handle(s.Host+s.path(), rec)
		for p, eh := range extra {
			l.mux.Handle(s.Host+p, &recorder{next: eh, parent: rec})
		}
		f.servers = append(f.servers, srv)
	}

	for _, l := range lns {
		hs := &http.Server{
			Handler: l.mux,
			TLSConfig: &tls.Config{
				Certificates: []tls.Certificate{cert},
				MinVersion:   tls.VersionTLS12,
			},
			ReadHeaderTimeout: 10 * time.Second,
			// A check that gives up closes its connection mid-handshake or
			// mid-request: routine here, so only at debug level.
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		}
		f.https = append(f.https, hs)
		f.done.Add(1)
		go func() {
			defer f.done.Done()
			if err := hs.ServeTLS(l.ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("fleet listener stopped", "addr", l.ln.Addr().String(), "err", err)
			}
		}()
	}
	logger.Info("fleet started", "servers", len(f.servers), "hosts", len(hosts), "ca", caFile)
	return f, nil
}

// listenFrom listens on the first 127.0.0.N:8443 with N from first to 254
// that is not in use, and returns it and N. Any error but "address in use"
// ends the search (EADDRNOTAVAIL: the system has no such loopback address).
func listenFrom(listen func(network, addr string) (net.Listener, error), first int) (net.Listener, int, error) {
	var last error = errors.New("no free loopback address")
	for n := first; n <= 254; n++ {
		ln, err := listen("tcp4", fmt.Sprintf("127.0.0.%d:%d", n, Port))
		if err == nil {
			return ln, n, nil
		}
		last = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("every 127.0.0.N:%d in use: %w", Port, last)
}

// Servers returns the fleet's servers in the order of Config.Servers.
func (f *Fleet) Servers() []Server { return slices.Clone(f.servers) }

// CAFile returns the path of the fleet CA's PEM certificate, for the
// check's -ca-file.
func (f *Fleet) CAFile() string { return f.caFile }

// Resolve returns where each host listens, "host:8443" -> "127.0.0.N", as
// the check's lab setting takes it (-resolve host:8443:127.0.0.N).
func (f *Fleet) Resolve() map[string]string {
	m := make(map[string]string, len(f.resolve))
	for k, v := range f.resolve {
		m[k] = v
	}
	return m
}

// Received returns what the server with the given id has received so far,
// one entry per request in arrival order: the HTTP method, then for a POST
// the JSON-RPC method ("POST initialize", "GET").
func (f *Fleet) Received(id string) []string {
	r, ok := f.rec[id]
	if !ok {
		return nil
	}
	return r.received()
}

// Close stops every server at once: connections are closed, requests held
// by Slow servers are dropped unanswered. It waits for the listeners to
// stop. Calling it again does nothing.
func (f *Fleet) Close() error {
	var errs []error
	f.once.Do(func() {
		close(f.quit)
		for _, hs := range f.https {
			if err := hs.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		f.done.Wait()
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close fleet: %w", err)
	}
	return nil
}

// recorder notes every request a server receives before passing it on;
// requests to a server's side paths are noted on its parent.
type recorder struct {
	next   http.Handler
	parent *recorder

	mu  sync.Mutex
	got []string
}

// maxRecordedBody bounds what the recorder reads of a POST body to name its
// JSON-RPC method.
const maxRecordedBody = 1 << 20

// ServeHTTP records r and serves it with the body restored.
func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	line := r.Method
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRecordedBody))
		r.Body.Close()
		if err != nil {
			http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			line += " " + m.Method
		} else {
			line += " ?"
		}
	}
	if r.URL.Path != "" && rc.parent != nil {
		line += " " + r.URL.Path
	}
	target := rc
	if rc.parent != nil {
		target = rc.parent
	}
	target.mu.Lock()
	target.got = append(target.got, line)
	target.mu.Unlock()
	rc.next.ServeHTTP(w, r)
}

func (rc *recorder) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}
