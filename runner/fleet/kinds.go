package fleet

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Kind is how a fleet server behaves toward a check.
type Kind string

// The kinds of server a fleet can hold. The first four are go-sdk servers;
// the others answer before any MCP server would, as a gateway in front of
// one does.
const (
	// Modern is a stateless Streamable HTTP server of protocol 2026-07-28:
	// it answers server/discover and tools/list (rule N4).
	Modern Kind = "modern"
	// Streamable is a stateful Streamable HTTP server that speaks only
	// protocol 2025-11-25: initialize, notifications/initialized,
	// tools/list.
	Streamable Kind = "streamable"
	// LegacySSE is a server on the HTTP+SSE transport of 2024-11-05: a GET
	// opens the event stream, whose endpoint event names where to post.
	LegacySSE Kind = "sse"
	// NeedsKey is a go-sdk server behind the SDK's bearer-token middleware:
	// without a token it answers 401 with a WWW-Authenticate Bearer
	// challenge naming its OAuth resource metadata, which it also serves.
	NeedsKey Kind = "needs-key"
	// RateLimited answers every request 429 Too Many Requests with a
	// Retry-After header.
	RateLimited Kind = "rate-limited"
	// Broken answers every request 500 Internal Server Error.
	Broken Kind = "broken"
	// Slow accepts every request and never answers it: the check gives up
	// at its deadline (rule N10).
	Slow Kind = "slow"
)

// Kinds lists every kind, in the order of the package documentation.
var Kinds = []Kind{Modern, Streamable, LegacySSE, NeedsKey, RateLimited, Broken, Slow}

// Protocol returns the protocol version a check learns from a server of
// kind k, "" when it learns none.
func (k Kind) Protocol() string {
	switch k {
	case Modern:
		return "2026-07-28"
	case Streamable:
		return "2025-11-25"
	case LegacySSE:
		return "2024-11-05"
	}
	return ""
}

// handlerOptions is what every kind's handler may need.
type handlerOptions struct {
	url        string // the server's own address, https://host:8443/path
	spec       Spec
	retryAfter time.Duration
	quit       <-chan struct{} // closed when the fleet closes
	logger     *slog.Logger
}

// Handler returns the HTTP handler of the server s, at its address
// s.URL(), and extra handlers by path on its host, as Start serves them:
// for a test that serves fleet servers on listeners and certificates of its
// own, and changes what a server is over its life. A RateLimited server
// asks for retryAfter (0 means DefaultRetryAfter); closing quit releases
// the requests a Slow server holds.
func Handler(s Spec, retryAfter time.Duration, quit <-chan struct{}, logger *slog.Logger) (http.Handler, map[string]http.Handler, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return s.Kind.handler(handlerOptions{url: s.URL(), spec: s, retryAfter: cmp.Or(retryAfter, DefaultRetryAfter), quit: quit, logger: logger})
}

// handler returns the HTTP handler of one fleet server, and extra handlers
// by path on its host (the OAuth resource metadata of a NeedsKey server).
func (k Kind) handler(o handlerOptions) (http.Handler, map[string]http.Handler, error) {
	switch k {
	case Modern:
		return mcp.NewStreamableHTTPHandler(o.mcpServer(nil), &mcp.StreamableHTTPOptions{
			Stateless: true, DisableLocalhostProtection: true, Logger: o.logger,
		}), nil, nil
	case Streamable:
		return mcp.NewStreamableHTTPHandler(o.mcpServer([]string{"2025-11-25"}), &mcp.StreamableHTTPOptions{
			DisableLocalhostProtection: true, Logger: o.logger,
		}), nil, nil
	case LegacySSE:
		return mcp.NewSSEHandler(o.mcpServer(nil), &mcp.SSEOptions{DisableLocalhostProtection: true}), nil, nil
	case NeedsKey:
		return o.needsKey()
	case RateLimited:
		secs := strconv.Itoa(int(o.retryAfter.Round(time.Second) / time.Second))
		return answer(http.StatusTooManyRequests, "rate limit reached, try again later\n", "Retry-After", secs), nil, nil
	case Broken:
		return answer(http.StatusInternalServerError, "internal server error: upstream database unavailable\n"), nil, nil
	case Slow:
		return never(o.quit), nil, nil
	}
	return nil, nil, fmt.Errorf("unknown kind %q", k)
}

type noArgs struct{}

// mcpServer returns a func handing every request one go-sdk server with the
// spec's tools, restricted to versions when not nil.
func (o handlerOptions) mcpServer(versions []string) func(*http.Request) *mcp.Server {
	about := &mcp.Implementation{Name: o.spec.ID, Version: "1.0.0", Title: o.spec.Title, Description: o.spec.Description, WebsiteURL: o.spec.Website}
	s := mcp.NewServer(about, &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		Logger:                    o.logger,
	})
	for _, name := range o.spec.tools() {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "demo tool " + name},
			func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
				// Never called by a check (rule N3); here so the tool is real.
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
			})
	}
	return func(*http.Request) *mcp.Server { return s }
}

// needsKey is a Modern server behind auth.RequireBearerToken, whose
// verifier accepts no token: every request without one gets 401 and the
// challenge names the resource metadata (RFC 9728), served beside it.
func (o handlerOptions) needsKey() (http.Handler, map[string]http.Handler, error) {
	metaPath := "/.well-known/oauth-protected-resource" + o.spec.path()
	host := o.spec.Host
	reject := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return nil, auth.ErrInvalidToken
	}
	inner, _, err := Modern.handler(o)
	if err != nil {
		return nil, nil, err
	}
	gate := auth.RequireBearerToken(reject, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: "https://" + host + ":8443" + metaPath,
	})
	meta := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             o.url,
		AuthorizationServers: []string{"https://auth." + host},
		ScopesSupported:      []string{"tools"},
	})
	return gate(inner), map[string]http.Handler{metaPath: meta}, nil
}

// answer answers every request with code, body and header pairs hdr.
func answer(code int, body string, hdr ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		io.WriteString(w, body)
	})
}

// never reads the request and holds it, answering nothing, until the
// client goes away or the fleet closes; then it drops the connection
// without an answer.
func never(quit <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-quit:
		}
		panic(http.ErrAbortHandler)
	})
}
