package data

import "slices"

// ProtocolSupport is how a server spoke to one check,
// beyond the version negotiated and the transport (Result.Protocol and
// Transport), read from the answers the check got anyway.
type ProtocolSupport struct {
	// Versions are the protocol versions server/discover listed: its
	// result's supportedVersions, or the data.supported of the -32022 it
	// answered instead. Nil when no server/discover was answered so (an
	// initialize-era or legacy server, or one known to be).
	Versions []string `json:"versions,omitempty"`
	// Session is whether the server kept a session with the check: over
	// Streamable HTTP, an answer of status 2xx that carried an
	// Mcp-Session-Id; over the legacy HTTP+SSE transport, always (its
	// posts go to an endpoint of the open stream). Nil when no handshake
	// succeeded.
	Session *bool `json:"session,omitempty"`
	// Answers is how the answers of status 200 came: AnswersJSON,
	// AnswersSSE or AnswersMixed; "" when none was either.
	Answers string `json:"answers,omitempty"`
}

// The forms of Answers.
const (
	AnswersJSON  = "json"  // every answer application/json
	AnswersSSE   = "sse"   // every answer an event stream (text/event-stream)
	AnswersMixed = "mixed" // some of each
)

// Speaks reports whether the server negotiated version with the check, or
// listed it in answer to server/discover.
func (p *ProtocolSupport) Speaks(negotiated, version string) bool {
	return negotiated == version || (p != nil && slices.Contains(p.Versions, version))
}

// The bounds of the versions kept: they are the server's to choose.
const (
	MaxDiscoverVersions      = 16      // versions kept at most
	maxDiscoverVersionsBytes = 1 << 10 // their encoding at most
	maxVersionBytes          = 64      // each one's encoding at most
)
