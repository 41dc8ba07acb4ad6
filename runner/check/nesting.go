package check

// sdkMaxNesting is how deeply the MCP SDK lets a JSON-RPC message nest
// (its internal/json defaultMaxDepth): a deeper answer is read off the wire
// and then refused by the SDK, with an error that wraps nothing a caller
// can test.
const sdkMaxNesting = 1000

// jsonNesting follows how deeply the JSON objects and arrays of an answer
// body nest as it is read, strings skipped, so that an answer the SDK
// refused for its depth can be named as such. An event
// stream's events are followed as one text. It costs one pass over bytes
// the guard reads anyway.
type jsonNesting struct {
	depth, max        int
	inString, escaped bool
}

// feed follows p, the next bytes of the body.
func (j *jsonNesting) feed(p []byte) {
	for _, c := range p {
		switch {
		case j.inString:
			switch {
			case j.escaped:
				j.escaped = false
			case c == '\\':
				j.escaped = true
			case c == '"':
				j.inString = false
			}
		case c == '"':
			j.inString = true
		case c == '{' || c == '[':
			j.depth++
			j.max = max(j.max, j.depth)
		case c == '}' || c == ']':
			j.depth = max(j.depth-1, 0)
		}
	}
}
