package check

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// findings is what the flows learned through the SDK, typed, for classify:
// never an error string.
type findings struct {
	Transport     string // transport of the last handshake that succeeded
	Protocol      string // protocol version it negotiated
	ServerName    string
	ServerVersion string
	// What the server said of itself for people (serverInfo's title,
	// description and websiteUrl).
	ServerTitle, ServerDescription, ServerWebsite string

	Handshake    bool               // a handshake (discover or initialize) succeeded
	ToolsOK      bool               // the first tools/list returned a valid result
	Tools        []string           // tool names, in the server's order, all pages read
	ToolDefs     []spool.ToolDef    // their definitions, for the fingerprint (spool.FingerprintTools)
	ToolsNote    string             // why pagination stopped early, "" when it did not
	ToolProblems []data.ToolProblem // the tool lint of the listed definitions (toollint.go)
	ToolsMissing bool               // a tools/list result whose tools was missing or null
	ToolsUnread  string             // why the SDK could not read a tools/list answer that came whole, "" when it could
	BadVersion   string             // a protocol version the server chose that the SDK does not speak
	RPCErr       *jsonrpc.Error
	RPCMethod    string // the request RPCErr answered

	// ToolUnnamed: a tools/list result, on any page, had a tool without
	// a name.
	ToolUnnamed bool

	// DiscoverVersions are the versions server/discover listed
	// (noteDiscover).
	DiscoverVersions []string
}

// errToolUnnamed rejects a tools/list result with a tool that has no name:
// not a valid result (clients built on the TypeScript SDK reject the whole
// list), though the Go SDK would take it.
var errToolUnnamed = errors.New("tools/list result has a tool without a name")

// errNoToolsArray rejects a tools/list result whose tools is missing or null:
// the SDK would silently read it as no tools.
var errNoToolsArray = errors.New("tools/list result has no tools array")

// errStopped is what the flow's middleware returns instead of sending a
// request once the guard saw the check end: a refusal (nothing may follow
// it) or a transport failure that the next request would only repeat.
var errStopped = errors.New("check already concluded: nothing more is sent")

// codeRejected is the SDK transport's own "rejected by transport" code, not
// one a server sent.
const codeRejected = -32005

// flow is one check's walk through the flows of rule N4.
type flow struct {
	url    string
	guard  *Guard
	logger *slog.Logger
	now    func() time.Time // the check's clock, for the tool lint's budget

	mu    sync.Mutex
	found findings
	// skipInit: the SDK's own fallback from server/discover to initialize
	// is not sent when discover found that the address takes no POSTs
	// (takesNoPosts); the flow goes to the legacy GET instead.
	skipInit bool
	// holdInit: initialize was refused earlier in this check, so the SDK's
	// fallback to it after server/discover is not sent (moveOn).
	holdInit bool
	// held: the tools of the tools/list page being answered, in the
	// server's order, and those of them with an x-mcp-header somewhere
	// (holdTools).
	held          []*mcp.Tool
	heldAnnotated map[*mcp.Tool]bool
}

// errNoPosts is what the middleware returns instead of sending initialize
// to an address that takes no POSTs.
var errNoPosts = errors.New("the address takes no POSTs: initialize not sent")

// errInitRefused is what the middleware returns instead of asking again an
// initialize the server refused earlier in the check.
var errInitRefused = errors.New("initialize was refused already: not asked again")

// setHoldInitialize sets whether initialize is held back because the server
// refused it earlier in the check.
func (f *flow) setHoldInitialize(hold bool) {
	f.mu.Lock()
	f.holdInit = hold
	f.mu.Unlock()
}

// setSkipInitialize sets whether initialize is held back after a discover
// that found no POSTs.
func (f *flow) setSkipInitialize(skip bool) {
	f.mu.Lock()
	f.skipInit = skip
	f.mu.Unlock()
}

// recordRPCError keeps the last JSON-RPC error a server answered to method.
func (f *flow) recordRPCError(method string, err error) {
	var rerr *jsonrpc.Error
	if !errors.As(err, &rerr) || rerr.Code == codeRejected {
		return
	}
	f.mu.Lock()
	f.found.RPCErr, f.found.RPCMethod = rerr, method
	f.mu.Unlock()
}

// middleware observes every request the SDK sends and every result before
// the SDK filters it, and stops the SDK from sending anything more once the
// guard saw the check end (after a refusal, rule N3 and the checks page; and
// no initialize after server/discover failed at the transport level).
func (f *flow) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec := f.guard.Record()
		if concluded(rec) {
			return nil, errStopped
		}
		f.mu.Lock()
		skip, hold := f.skipInit, f.holdInit
		f.mu.Unlock()
		if method == "initialize" && skip && takesNoPosts(rec) {
			return nil, errNoPosts
		}
		if method == "initialize" && hold {
			return nil, errInitRefused
		}
		res, err := next(ctx, method, req)
		f.recordRPCError(method, err)
		if method == "tools/list" && err != nil && ctx.Err() == nil {
			f.noteToolsUnread(err)
		}
		if method == "server/discover" {
			f.noteDiscover(res, err)
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			if r != nil && !slices.Contains(mcp.SupportedProtocolVersions(), r.ProtocolVersion) {
				f.mu.Lock()
				f.found.BadVersion = r.ProtocolVersion
				f.mu.Unlock()
			}
		case *mcp.ListToolsResult:
			if r != nil && r.Tools == nil {
				f.mu.Lock()
				f.found.ToolsMissing = true
				f.mu.Unlock()
				return nil, errNoToolsArray
			}
			if r != nil && slices.ContainsFunc(r.Tools, func(t *mcp.Tool) bool { return t == nil || t.Name == "" }) {
				f.mu.Lock()
				f.found.ToolUnnamed = true
				f.mu.Unlock()
				return nil, errToolUnnamed
			}
			if r != nil {
				f.holdTools(r)
			}
		}
		return res, err
	}
}

// concluded reports whether the guard's record already decides the check
// whatever comes next: a refusal (401, 403, 429), or a failure at the
// transport level (connection, TLS, size, redirect) of the last request that
// was attempted.
func concluded(rec Record) bool {
	if rec.Refusal != 0 {
		return true
	}
	for i := len(rec.Exchanges) - 1; i >= 0; i-- {
		switch rec.Exchanges[i].ErrKind {
		case ErrBlocked:
			continue // a message the guard kept from leaving; the check goes on
		case ErrCanceled:
			// The check itself ended that read (the SDK stops reading a
			// stream once it has its answer); the deadline is the
			// middleware's own ctx check.
			continue
		case ErrNone:
			return false
		}
		return true
	}
	return false
}

// newClient returns an SDK client set as the notes require: no capabilities
// (the default advertises roots), no handlers, no keep-alive pings, no
// multi-round-trip retries, and the flow's middleware.
func (f *flow) newClient() *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: data.Version()}, &mcp.ClientOptions{
		Logger:         f.logger,
		Capabilities:   &mcp.ClientCapabilities{},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	c.AddSendingMiddleware(f.middleware)
	return c
}

// session runs one handshake over t asking for version, then tools/list. It
// reports whether the handshake succeeded; what it learned goes into
// f.found.
func (f *flow) session(ctx context.Context, t mcp.Transport, transport, version string) bool {
	cs, err := f.newClient().Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		f.logger.Debug("handshake failed", "url", f.url, "transport", transport, "version", version, "err", err)
		return false
	}
	// Close ends the session. The DELETE it may try for a stateful session
	// is refused by the guard (rule N2), hence its error is of no interest.
	defer func() { _ = cs.Close() }()
	ir := cs.InitializeResult()
	f.mu.Lock()
	f.found.Handshake = true
	f.found.Transport = transport
	f.found.Protocol = ir.ProtocolVersion
	f.found.ServerName, f.found.ServerVersion = "", ""
	f.found.ServerTitle, f.found.ServerDescription, f.found.ServerWebsite = "", "", ""
	if si := ir.ServerInfo; si != nil {
		f.found.ServerName, f.found.ServerVersion = si.Name, si.Version
		f.found.ServerTitle, f.found.ServerDescription, f.found.ServerWebsite = si.Title, si.Description, si.WebsiteURL
	}
	f.mu.Unlock()
	f.listTools(ctx, cs)
	return true
}

// listTools reads up to maxToolPages pages of tools/list, stopping early on
// a cursor the server already gave (a server repeating its cursor would
// otherwise be asked forever). Only the first page decides whether the
// server works; a later page that fails keeps the names read so far.
func (f *flow) listTools(ctx context.Context, cs *mcp.ClientSession) {
	var names []string
	var defs []spool.ToolDef
	lint := newLinter(f.now)
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	note := ""
	for page := 0; ; page++ {
		if page == maxToolPages {
			note = "first 10 pages"
			break
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			if errors.Is(err, errToolUnnamed) {
				// A later page too: the list is not valid, whatever came before.
				f.logger.Debug("tools/list invalid", "url", f.url, "page", page)
				f.mu.Lock()
				f.found.ToolsOK = false
				f.mu.Unlock()
				return
			}
			if page == 0 {
				f.logger.Debug("tools/list failed", "url", f.url, "err", err)
				return
			}
			note = "a later page failed"
			break
		}
		if page == 0 {
			f.mu.Lock()
			f.found.ToolsOK = true
			f.mu.Unlock()
		}
		tools := f.takeTools(res.Tools)
		linted := make([]listedTool, 0, len(tools))
		for _, t := range tools {
			names = append(names, t.Name)
			defs = append(defs, toolDef(t))
			linted = append(linted, listedTool{name: t.Name, description: t.Description, input: t.InputSchema, output: t.OutputSchema})
		}
		// Page by page, so that a page's schemas are garbage before the
		// next is read.
		lint.add(ctx, linted)
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			note = "server repeated a cursor"
			break
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	problems := lint.result()
	f.mu.Lock()
	f.found.Tools, f.found.ToolDefs, f.found.ToolsNote, f.found.ToolProblems = names, defs, note, problems
	f.mu.Unlock()
}

// toolDef keeps what a fingerprint covers of a listed tool, its schema and
// annotations re-encoded canonically (encoding/json sorts object keys).
func toolDef(t *mcp.Tool) spool.ToolDef {
	d := spool.ToolDef{Name: t.Name, Description: t.Description}
	if t.InputSchema != nil {
		d.InputSchema, _ = json.Marshal(t.InputSchema) // decoded from JSON: encodes again
	}
	if t.Annotations != nil {
		d.Annotations, _ = json.Marshal(t.Annotations)
	}
	return d
}

// fill copies what the flows learned into the result.
func (f *flow) fill(res *data.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.found.Handshake {
		return
	}
	res.Protocol = f.found.Protocol
	res.Transport = f.found.Transport
	res.ServerName = f.found.ServerName
	res.ServerVersion = f.found.ServerVersion
	res.ServerTitle, res.ServerDescription = f.found.ServerTitle, f.found.ServerDescription
	res.ServerWebsite = data.WebLink(f.found.ServerWebsite) // a page links it: https only
	if f.found.ToolsOK {
		res.Tools = f.found.Tools
		res.ToolCount = len(f.found.Tools)
		res.ToolsHash, res.ToolDefs = spool.FingerprintTools(f.found.ToolDefs)
		res.ToolProblems = f.found.ToolProblems
	}
}

// snapshot returns a copy of the findings.
func (f *flow) snapshot() findings {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.found
}
