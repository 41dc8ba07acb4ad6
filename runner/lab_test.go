package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/internal/tlsca"
	"plug.directory/prober/runner/check"
)

// labFarm is n lab MCP servers (go-sdk, Streamable HTTP), each listening on
// its own 127.a.b.c:8443 under the name hNNNN.lab.test, with a certificate
// from a throw-away CA. Any path on a host is the MCP endpoint, so several
// servers (ids) can share one host.
type labFarm struct {
	CAFile  string            `json:"ca_file"`
	Resolve map[string]string `json:"resolve"` // "hNNNN.lab.test:8443" -> "127.a.b.c"
	Hosts   []string          `json:"hosts"`

	srv   *http.Server
	mu    sync.Mutex
	hits  map[string]int          // requests per host
	serve map[string]http.Handler // hosts that serve their own MCP server (Serve)
}

// Serve has host i serve s (stateless Streamable HTTP) instead of the lab
// server.
func (f *labFarm) Serve(i int, s *mcp.Server) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.serve[f.Hosts[i]] = h
}

// lab returns the lab setting that reaches the farm.
func (f *labFarm) lab() check.Lab {
	return check.Lab{Enabled: true, Resolve: f.Resolve, CAFile: f.CAFile}
}

// URL returns the address of server id on host i.
func (f *labFarm) URL(i int, id string) string {
	return "https://" + f.Hosts[i] + ":8443/mcp/" + id
}

// Hits returns the requests host has received.
func (f *labFarm) Hits(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[host]
}

func (f *labFarm) Close() { f.srv.Close() }

// MustLabFarm starts a farm of n servers, closed when the test ends.
func MustLabFarm(tb testing.TB, n int) *labFarm {
	tb.Helper()
	f, err := newLabFarm(n, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.Close)
	return f
}

// newLabFarm starts n servers; the CA's PEM is written in dir.
func newLabFarm(n int, dir string) (*labFarm, error) {
	caFile := filepath.Join(dir, "lab-ca.pem")
	cert, err := labCertificate(caFile)
	if err != nil {
		return nil, err
	}
	mcpSrv := mcp.NewServer(&mcp.Implementation{Name: "lab-server", Version: "1.0.0"}, nil)
	mcp.AddTool(mcpSrv, &mcp.Tool{Name: "echo", Description: "says it back"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpSrv },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	f := &labFarm{CAFile: caFile, Resolve: map[string]string{}, hits: map[string]int{}, serve: map[string]http.Handler{}}
	f.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, _ := net.SplitHostPort(r.Host)
			f.mu.Lock()
			f.hits[host]++
			own := f.serve[host]
			f.mu.Unlock()
			if own != nil {
				own.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(w, r)
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	for i := range n {
		ln, err := testutil.Listen8443()
		if err != nil {
			f.srv.Close()
			return nil, err
		}
		host := fmt.Sprintf("h%04d.lab.test", i)
		f.Hosts = append(f.Hosts, host)
		f.Resolve[host+":8443"] = netip.MustParseAddrPort(ln.Addr().String()).Addr().String()
		go f.srv.ServeTLS(ln, "", "")
	}
	return f, nil
}

// childFarm starts the farm of a child process, RUNNER_TEST_HOSTS servers
// with their CA in a temporary directory; stop closes the farm and removes
// the directory.
func childFarm() (farm *labFarm, stop func(), err error) {
	n, _ := strconv.Atoi(os.Getenv(childHosts))
	tmp, err := os.MkdirTemp("", "lab-child-")
	if err != nil {
		return nil, nil, err
	}
	farm, err = newLabFarm(n, tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return farm, func() { farm.Close(); os.RemoveAll(tmp) }, nil
}

// labCertificate makes a CA, writes its PEM to caFile and returns a
// certificate for *.lab.test it signed.
func labCertificate(caFile string) (tls.Certificate, error) {
	// Valid on any day the tests' clocks give (the check verifies on its
	// injected clock).
	ca, err := tlsca.New("runner lab CA", testutil.ValidFrom, testutil.ValidUntil)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	return ca.Leaf(testutil.ValidFrom, testutil.ValidUntil, "*.lab.test")
}

// checkConfig configures the real check to reach farm, on clock.
func checkConfig(farm *labFarm, clock Clock) check.Config {
	return check.Config{Lab: farm.lab(), Now: clock.Now, Timeout: 10 * time.Second}
}

// MustLabChecker returns the real check reaching farm, on clock.
func MustLabChecker(tb testing.TB, farm *labFarm, clock Clock) Checker {
	tb.Helper()
	c, err := NewChecker(checkConfig(farm, clock))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// hitsTotal counts the requests of every host.
func (f *labFarm) hitsTotal() int {
	n := 0
	for _, h := range f.Hosts {
		n += f.Hits(h)
	}
	return n
}
