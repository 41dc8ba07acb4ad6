package check

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"plug.directory/prober/data"
)

// How a server spoke to the check, read from the
// answers the flows got anyway: the versions server/discover listed (kept
// by the flow's middleware, noteDiscover), whether a session was kept and
// how the answers came (from the guard's record, supportOf).

// noteDiscover keeps the versions a server listed in answer to
// server/discover: the result's supportedVersions, or the data.supported
// of the -32022 it answered instead.
func (f *flow) noteDiscover(res mcp.Result, err error) {
	var versions []string
	if r, ok := res.(*mcp.DiscoverResult); ok && r != nil {
		versions = r.SupportedVersions
	}
	var rerr *jsonrpc.Error
	if errors.As(err, &rerr) && rerr.Code == mcp.CodeUnsupportedProtocolVersion && len(rerr.Data) > 0 {
		var d mcp.UnsupportedProtocolVersionData
		if json.Unmarshal(rerr.Data, &d) == nil {
			versions = d.Supported
		}
	}
	if len(versions) == 0 {
		return
	}
	f.mu.Lock()
	f.found.DiscoverVersions = slices.Clone(versions[:min(len(versions), data.MaxDiscoverVersions)])
	f.mu.Unlock()
}

// supportOf returns how the server spoke to the check: the versions its
// discover listed, whether the handshake that succeeded kept a session
// (an Mcp-Session-Id on an answer of status 2xx; the legacy HTTP+SSE
// transport always does), and how its answers of status 200 came. Nil
// when the check learned none of it.
func supportOf(rec Record, found findings) *data.ProtocolSupport {
	p := &data.ProtocolSupport{Versions: found.DiscoverVersions, Answers: answersOf(rec)}
	if found.Handshake {
		session := found.Transport == data.TransportSSE || slices.ContainsFunc(rec.Exchanges, func(ex Exchange) bool {
			return ex.Status >= 200 && ex.Status < 300 && ex.Header.Get("Mcp-Session-Id") != ""
		})
		p.Session = &session
	}
	if p.Versions == nil && p.Session == nil && p.Answers == "" {
		return nil
	}
	return p
}

// answersOf summarizes the media types of the answers of status 200:
// data.AnswersJSON, data.AnswersSSE, data.AnswersMixed, or "" when none
// was application/json or text/event-stream.
func answersOf(rec Record) string {
	var json, sse bool
	for _, ex := range rec.Exchanges {
		if ex.Status != http.StatusOK {
			continue
		}
		switch mediaType(ex) {
		case "application/json":
			json = true
		case "text/event-stream":
			sse = true
		}
	}
	switch {
	case json && sse:
		return data.AnswersMixed
	case json:
		return data.AnswersJSON
	case sse:
		return data.AnswersSSE
	}
	return ""
}
