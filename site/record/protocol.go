package record

import (
	"slices"
	"time"

	"plug.directory/prober/data"
)

// Protocol is how a server spoke to the last check that got through a
// handshake, as its file publishes it: kept while later
// checks fail, so a server that is down still shows what it speaks.
type Protocol struct {
	Version   string `json:"version"`   // the version negotiated
	Era       string `json:"era"`       // "discover", "initialize" or "legacy_sse" (rule N4)
	Transport string `json:"transport"` // "streamable-http" or "sse"
	// DiscoverVersions are the versions server/discover listed; null when
	// that check did not ask it (a server known to be of an earlier era)
	// or got no listing.
	DiscoverVersions []string `json:"discover_versions"`
	// Speaks20260728 says it negotiated 2026-07-28 or listed it: what
	// index.json counts.
	Speaks20260728 bool    `json:"speaks_2026_07_28"`
	Session        *bool   `json:"session"` // it kept a session: an Mcp-Session-Id, or the legacy SSE transport; null when not known (checked before these facts were kept)
	Answers        *string `json:"answers"` // "json", "sse" or "mixed"; null when no answer had either form
	SeenAt         Time    `json:"seen_at"` // start of that check
}

// protoSeen is the last handshake a summary's checks got through.
type protoSeen struct {
	Version, Transport string
	Support            data.ProtocolSupport
	At                 time.Time // start of the check
}

// noteProtocol keeps how r's server spoke when r is the latest check that
// got through a handshake (one that negotiated a version).
func (s *Summary) noteProtocol(r data.Result) {
	if r.Protocol == "" || (s.Proto != nil && r.Started.Before(s.Proto.At)) {
		return
	}
	s.Proto = &protoSeen{Version: r.Protocol, Transport: r.Transport, At: r.Started}
	if r.Support != nil {
		s.Proto.Support = *r.Support
	}
}

// protocolOf returns the published form of p; nil for nil.
func protocolOf(p *protoSeen) *Protocol {
	if p == nil {
		return nil
	}
	return &Protocol{Version: p.Version, Era: era(p.Version, p.Transport), Transport: p.Transport,
		DiscoverVersions: slices.Clone(p.Support.Versions), Speaks20260728: p.Support.Speaks(p.Version, data.DiscoverProtocolVersion),
		Session: p.Support.Session, Answers: orNull(p.Support.Answers), SeenAt: Time{p.At.UTC()}}
}

// protoSeenOf reads the last handshake back from its published form.
func protoSeenOf(p *Protocol) *protoSeen {
	if p == nil {
		return nil
	}
	return &protoSeen{Version: p.Version, Transport: p.Transport, At: p.SeenAt.UTC(),
		Support: data.ProtocolSupport{Versions: p.DiscoverVersions, Session: p.Session, Answers: ValueOf(p.Answers)}}
}

// supportFields are a last result's protocol facts as
// its file publishes them: null where the check learned nothing of them.
type supportFields struct {
	DiscoverVersions []string `json:"discover_versions"` // what server/discover listed; null when not asked or no listing
	Session          *bool    `json:"session"`           // whether the server kept a session; null when no handshake succeeded
	Answers          *string  `json:"answers"`           // "json", "sse" or "mixed"; null when no answer had either form
}

// supportFieldsOf returns the published form of p.
func supportFieldsOf(p *data.ProtocolSupport) supportFields {
	if p == nil {
		return supportFields{}
	}
	return supportFields{DiscoverVersions: slices.Clone(p.Versions), Session: p.Session, Answers: orNull(p.Answers)}
}

// support reads the facts back; nil when none.
func (f supportFields) support() *data.ProtocolSupport {
	if f.DiscoverVersions == nil && f.Session == nil && f.Answers == nil {
		return nil
	}
	return &data.ProtocolSupport{Versions: f.DiscoverVersions, Session: f.Session, Answers: ValueOf(f.Answers)}
}

// ProtocolTotals counts the servers of index.json by how they last spoke
// to a check; a server no check got through a handshake
// with is in none of them.
type ProtocolTotals struct {
	Speaks20260728 int            `json:"speaks_2026_07_28"` // negotiated 2026-07-28 or listed it in answer to server/discover
	Versions       []VersionTotal `json:"versions"`          // per version negotiated, newest first
}

// VersionTotal is how many servers last negotiated one protocol version.
type VersionTotal struct {
	Version string `json:"version"`
	Count   int    `json:"count"`
}

// AnswersText says how the answers came, for the server's page.
func (p Protocol) AnswersText() string {
	switch {
	case p.Answers == nil && p.Session == nil:
		return "how it answers is not known yet" // checked before these facts were kept
	case p.Answers == nil:
		return "no answer as JSON or an event stream"
	case *p.Answers == data.AnswersJSON:
		return "answers as JSON"
	case *p.Answers == data.AnswersSSE:
		return "answers as event streams"
	}
	return "answers as JSON and as event streams"
}

// SessionText says whether the server kept a session, for its page.
func (p Protocol) SessionText() string {
	switch {
	case p.Session == nil:
		return "whether it keeps a session is not known yet"
	case *p.Session:
		return "keeps a session"
	}
	return "no session"
}
