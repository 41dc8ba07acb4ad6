package check

import "testing"

// TestAnswerWatch proves the event-stream scan that ends a POST's stream
// at its answer: every SSE line ending, events split across reads, and
// only a response with the request's id counts.
func TestAnswerWatch(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		chunks []string
		want   string // the stream up to where the watch ends it; "" if it never does
	}{
		{"N9_LF", "1", []string{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\njunk"},
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"},
		{"N9_CRLF_split_across_reads", "1", []string{"data: {\"jsonrpc\":\"2.0\",", "\"id\":1,\"error\":{}}\r", "\n\r", "\nmore"},
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{}}\r\n\r"},
		{"N9_CR", "x", []string{"data: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\r\r: junk"},
			"data: {\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}\r\r"},
		{"N9_data_over_two_lines", "1", []string{"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n"},
			"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n"},
		{"N9_only_data_lines_count", "1", []string{"datum: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\nid: 1\nda", "ta:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n\n"},
			"datum: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\nid: 1\ndata:{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n\n"},
		{"N9_notification_and_other_id_read_on", "1", []string{
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"id\":1}\n\n",
			"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n",
			": comment\n\n",
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &answerWatch{id: tc.id}
			var got string
			ended := false
			for _, c := range tc.chunks {
				if end := w.feed([]byte(c)); end >= 0 {
					got += c[:end]
					ended = true
					break
				}
				got += c
			}
			if !ended {
				got = ""
			}
			if got != tc.want {
				t.Errorf("stream ended after %q, want %q", got, tc.want)
			}
		})
	}
}
