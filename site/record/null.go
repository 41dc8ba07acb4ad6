package record

import "plug.directory/prober/data"

// orNull returns nil for the zero value of T, else a pointer to v: a
// published value that does not apply is null, never "" or 0.
func orNull[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ValueOf returns *p, or the zero value of T for nil: how a published file
// is read back.
func ValueOf[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// latencyOf is the latency the site publishes for a check: its duration in
// milliseconds, or nil when no answer came (it timed out, the connection
// was refused, the name did not resolve...: no HTTP status), whose
// duration measures the prober's patience, not the server. The history
// keeps the measured duration all the same.
func latencyOf(r data.Result) *int64 {
	if r.HTTPStatus == 0 {
		return nil
	}
	ms := r.Duration.Milliseconds()
	return &ms
}
