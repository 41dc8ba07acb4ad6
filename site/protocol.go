package site

import (
	"slices"
	"strings"
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
func (s *summary) noteProtocol(r data.Result) {
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
		Support: data.ProtocolSupport{Versions: p.DiscoverVersions, Session: p.Session, Answers: valueOf(p.Answers)}}
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
	return &data.ProtocolSupport{Versions: f.DiscoverVersions, Session: f.Session, Answers: valueOf(f.Answers)}
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

// rowTotals returns, in one pass over every row (a million each minute),
// the count per status, the protocol totals, how many servers have tool
// problems, and how many rows' facts are not read yet.
func rowTotals(st *store) (map[data.Outcome]int, ProtocolTotals, int, int) {
	var t ProtocolTotals
	problems, pending := 0, 0
	counts, byVersion := map[data.Outcome]int{}, map[string]int{}
	for i := range st.Rows {
		r := &st.Rows[i]
		counts[r.Status]++
		switch {
		case r.Problems < 0:
			pending++
			continue
		case r.Problems > 0:
			problems++
		}
		if r.Speaks {
			t.Speaks20260728++
		}
		if r.Protocol != "" {
			byVersion[r.Protocol]++
		}
	}
	t.Versions = []VersionTotal{}
	for v, n := range byVersion {
		t.Versions = append(t.Versions, VersionTotal{Version: v, Count: n})
	}
	slices.SortFunc(t.Versions, func(a, b VersionTotal) int { return strings.Compare(b.Version, a.Version) })
	return counts, t, problems, pending
}

// factsBackfill is how many rows whose facts are not read yet (a site
// record of the layout before them, storeMagicV2) are rendered per run on
// top of those due anyway: a million are caught up within a working day,
// no run costing more than a few seconds more.
var factsBackfill = 2000

// backfillFacts makes candidates of up to factsBackfill rows whose facts
// are not read yet, on top of the candidates that are; once none is left
// it costs nothing more (a run saves the record only when it rendered
// every candidate).
func (p *publication) backfillFacts() {
	if !p.st.factsPending {
		return
	}
	p.st.factsPending = false
	n := 0
	for i := range p.st.Rows {
		if r := &p.st.Rows[i]; r.Problems < 0 && !p.cand[r.ID] {
			if n == factsBackfill {
				p.st.factsPending = true
				return
			}
			p.cand[r.ID] = true
			n++
		}
	}
}

// setFacts sets a row's facts from its rendered file (index.json counts
// them: its head is encoded every publish).
func (r *row) setFacts(f ServerFile) {
	proto, speaks, problems := "", false, int32(0)
	if p := f.Protocol; p != nil {
		proto, speaks = p.Version, p.Speaks20260728
	}
	if lr := f.LastResult; lr != nil {
		problems = int32(len(lr.ToolProblems))
	}
	r.Protocol, r.Speaks, r.Problems = proto, speaks, problems
}

// boolByte encodes b as one byte of the site's record.
func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
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
