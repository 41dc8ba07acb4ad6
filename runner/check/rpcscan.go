package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"plug.directory/prober/data"
)

// notJSONRPC is the N3 verdict on a body the guard cannot read as exactly
// one JSON-RPC 2.0 message.
const notJSONRPC = "not a JSON-RPC message"

// rpcKeys are the only members a JSON-RPC message may have. Anything else
// (including a case variant such as "Method", which a case-insensitive
// decoder on the server might read instead of "method") is refused.
var rpcKeys = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// inspectRPC reads a POST body: the JSON-RPC method ("response" for an
// answer, "batch" for an array), the id as sent, and why rule N3 forbids it
// ("" when allowed). Only single messages are allowed: the requests
// server/discover, initialize and tools/list with an id, and the
// notification notifications/initialized without one. The body is read
// strictly (one object, no duplicate or unknown members, "jsonrpc":"2.0"),
// so a server's parser cannot see a different method than the guard did.
func inspectRPC(body []byte) (method, id, forbidden string) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil {
			return "batch", "", notJSONRPC
		}
		for _, m := range batch {
			if mm, _, f := inspectRPC(m); f != "" {
				return "batch", "", "batch with " + f
			} else if mm != "" {
				method = mm
			}
		}
		return "batch", "", "batch of " + method
	}
	fields, err := objectFields(trimmed)
	if err != nil {
		return "", "", notJSONRPC
	}
	for k := range fields {
		if !rpcKeys[k] {
			return "", "", notJSONRPC
		}
	}
	if version, err := jsonString(fields["jsonrpc"]); err != nil || version != "2.0" {
		return "", "", notJSONRPC
	}
	rawID, hasID := fields["id"]
	rawMethod, hasMethod := fields["method"]
	if hasID && string(rawID) == "null" {
		if hasMethod { // a request or notification never has a null id
			return "", "", notJSONRPC
		}
		hasID = false // an error answer to a message the server could not read
	}
	if hasID {
		if id, err = rpcID(rawID); err != nil {
			return "", "", notJSONRPC
		}
	}
	if !hasMethod {
		if _, ok := fields["result"]; ok {
			return "response", id, "response to a server request"
		}
		if _, ok := fields["error"]; ok {
			return "response", id, "response to a server request"
		}
		return "", id, notJSONRPC
	}
	if method, err = jsonString(rawMethod); err != nil {
		return "", id, notJSONRPC
	}
	_, hasResult := fields["result"]
	_, hasError := fields["error"]
	if hasResult || hasError {
		return method, id, notJSONRPC
	}
	if !slices.Contains(data.AllowedRPCMethods, method) {
		if method == "" {
			return method, id, "empty method"
		}
		return method, id, method
	}
	notification := strings.HasPrefix(method, "notifications/")
	switch {
	case notification && hasID:
		return method, id, method + " with an id"
	case !notification && !hasID:
		return method, id, method + " without an id"
	}
	return method, id, ""
}

// objectFields splits exactly one JSON object into its members, refusing
// duplicate members and anything after the object. The body is validated
// by encoding/json first, so the scan below only walks well-formed JSON.
func objectFields(b []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(b) {
		return nil, errors.New("invalid JSON")
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	fields := make(map[string]json.RawMessage, 4)
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		end := skipValue(b, i) // the key, a string
		key, err := jsonString(b[i:end])
		if err != nil {
			return nil, err
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("duplicate member %q", key)
		}
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // past ':'
		end = skipValue(b, i)
		fields[key] = json.RawMessage(b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	// json.Valid accepted one value, so nothing but space follows the '}'.
	return fields, nil
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the well-formed JSON value that
// starts at i.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		default:
			if depth == 0 && (c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				return i // end of a number, true, false or null
			}
		}
	}
	return i
}

// jsonString decodes a JSON string literal, quickly when it has no escapes.
func jsonString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// rpcID renders a request id as sent: a string's content or a number's
// digits. Any other JSON value is not a valid id.
func rpcID(raw json.RawMessage) (string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		return jsonString(raw)
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("invalid id %s", raw)
}

// answerWatch follows a POST's event stream (text/event-stream) for the
// JSON-RPC answer to the request with id: once the event carrying it has
// ended, the rest of the stream is of no use to the check (the server
// should close it there) and is not read. It parses the stream as SSE
// does: lines end at CRLF, LF or CR, an empty line ends an event, and an
// event's data is its "data:" lines joined by LF. Only data is kept.
type answerWatch struct {
	id   string
	head []byte // the current line's first bytes, until it is known whether it is a data line
	kind int8   // of the current line: 0 not known yet, 1 data (its value goes to data), -1 other
	data []byte // the current event's data so far
	cr   bool   // the last byte was a CR: an LF right after it ends nothing
}

// dataField starts a data line ("data:", then one optional space).
const dataField = "data:"

// feed scans the next bytes of the stream and returns the index in p just
// past the line that ends the event carrying the answer, or -1.
func (w *answerWatch) feed(p []byte) int {
	for i, c := range p {
		if c == '\n' && w.cr {
			w.cr = false
			continue
		}
		w.cr = c == '\r'
		if c == '\n' || c == '\r' {
			if w.endLine() {
				return i + 1
			}
			continue
		}
		switch w.kind {
		case 1:
			w.data = append(w.data, c)
		case 0:
			w.head = append(w.head, c)
			switch {
			case len(w.head) == len(dataField) && string(w.head) == dataField:
				w.kind = 1
			case !strings.HasPrefix(dataField, string(w.head)):
				w.kind = -1
			}
		}
	}
	return -1
}

// endLine takes in the line just ended and reports whether it ended the
// event carrying the answer.
func (w *answerWatch) endLine() bool {
	empty := len(w.head) == 0
	if w.kind == 1 {
		w.data = append(w.data, '\n')
	}
	w.head, w.kind = w.head[:0], 0
	if !empty {
		return false
	}
	data := w.data
	w.data = w.data[:0]
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result jsonPresent     `json:"result"`
		Error  jsonPresent     `json:"error"`
	}
	if len(data) == 0 || json.Unmarshal(data, &m) != nil || m.Method != nil || !m.Result && !m.Error {
		return false
	}
	id, err := rpcID(m.ID)
	return err == nil && id == w.id
}

// jsonPresent records that a member was there, whatever its value, without
// keeping it.
type jsonPresent bool

// UnmarshalJSON marks the member present.
func (p *jsonPresent) UnmarshalJSON([]byte) error {
	*p = true
	return nil
}
