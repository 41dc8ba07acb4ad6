package metrics

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"plug.directory/prober/site"
)

// Publish is what one publish reports.
type Publish struct {
	Finished time.Time     // when the publish ended
	Took     time.Duration // its wall time
	OK       bool          // the site was written

	Servers int // servers in the ranked list
	Written int // files written (only changed files are)
	Removed int // files of servers no longer listed, removed
	Results int // results read
	Bad     int // inputs set aside (rows, lines), the ranked list's bad rows while they stay in it
	// Unpublished are the ids of the servers whose files the publish could
	// not write (site.Stats.Unpublished), sorted: each cost itself only.
	Unpublished []string
}

// MaxUnpublishedNamed is how many of the servers a publish could not write
// publish.prom names, one series each; the count names them all.
const MaxUnpublishedNamed = 10

// WritePublish writes p to the metrics file at path, atomically.
func WritePublish(path string, p Publish) error {
	var f family
	n := namespace + "_publish_"
	if p.OK {
		f.gauge(n+"servers", "Servers the last publish listed.", float64(p.Servers))
		f.gauge(n+"files_written", "Files the last publish wrote (a file is rewritten only when its bytes change).", float64(p.Written))
		f.gauge(n+"files_removed", "Files of servers no longer listed that the last publish removed.", float64(p.Removed))
		f.gauge(n+"results", "Results the last publish read.", float64(p.Results))
		f.gauge(n+"bad_inputs", "Inputs the last publish set aside or found bad: rows, lines, files; the ranked list's bad rows counted while they stay in it, read again or not (logged once a day).", float64(p.Bad))
		f.gauge(n+"servers_unpublished", "Servers whose files the last publish could not write (the others were published); status.json names them all.", float64(len(p.Unpublished)))
		named := prometheus.NewDesc(n+"server_unpublished", "1 for each server, by id, whose files the last publish could not write; at most the first ten by id.", []string{"id"}, nil)
		for _, id := range p.Unpublished[:min(len(p.Unpublished), MaxUnpublishedNamed)] {
			f = append(f, prometheus.MustNewConstMetric(named, prometheus.GaugeValue, 1, id))
		}
	}
	return write(path, step{name: "publish", finished: p.Finished, ok: p.OK, took: p.Took}, f)
}

// PublishOf returns what a publish that ran from started to finished and
// returned st and err reports.
func PublishOf(st site.Stats, err error, started, finished time.Time) Publish {
	p := Publish{Finished: finished, Took: finished.Sub(started), OK: err == nil,
		Servers: st.Servers, Written: st.Written, Removed: st.Removed, Results: st.Results, Bad: len(st.Bad) + st.ListBadUnread}
	for _, u := range st.Unpublished {
		p.Unpublished = append(p.Unpublished, u.ID)
	}
	slices.Sort(p.Unpublished)
	return p
}
