package soak

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site"
	"plug.directory/prober/site/feed"
	"plug.directory/prober/site/record"
)

// checkpoint holds the site published at minute m to the table and to the
// checks the run made:
//   - each check read the status the table gives its server then;
//   - a server is published while listed, with its badges, feed and
//     strip, and not otherwise; its status is its last check's (paused
//     while the paused list names it);
//   - its uptime over 24 h, 7 and 30 days and each day of its strip count
//     the checks made in them, and a day with checks is a listed day;
//   - the outage is one failing incident within it;
//   - its tool changes are those of the table;
//   - a certificate's warnings are dated when the check saw them, never
//     before its first check, and outlive the certificate's renewal;
//   - no feed entry is lost or dated before the previous checkpoint;
//   - the history holds one row for each planned check;
//   - a full rebuild from the data directory gives the same site, byte
//     for byte.
func (s *soak) checkpoint(m time.Time) {
	t := s.t
	now := s.clock.Now()
	s.mu.Lock()
	checks := append([]checked(nil), s.checks...)
	s.mu.Unlock()
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: the check at %s read %s, the table says %s", c.id, c.started.Format(time.RFC3339), c.got, c.want)
		}
	}
	for _, sv := range s.servers {
		s.checkServer(sv, now, checks)
	}
	// The history: a row for each planned check.
	rows, bad, err := history.ReadHistory(s.dir, s.run.start.Add(-24*time.Hour), now.Add(time.Hour))
	if err != nil || len(bad) > 0 {
		t.Fatalf("read the history at %s: %v %v", m, err, bad)
	}
	got := map[string]int{}
	for _, r := range rows {
		got[r.ID]++
	}
	for id, n := range s.planned {
		if got[id] != n {
			t.Errorf("%s at %s: %d rows in the history, %d checks planned", id, m.Format(time.RFC3339), got[id], n)
		}
	}
	s.rebuild(m)
	s.last = now
	t.Logf("checkpoint %s: %d checks, %d history rows", m.Format(time.RFC3339), len(checks), len(rows))
}

func (s *soak) checkServer(sv *scripted, now time.Time, checks []checked) {
	t, l, id := s.t, sv.life, sv.life.id
	files := []string{"servers/" + id + ".json", "feeds/" + id + ".atom", "badges/" + id + ".json", "badges-uptime/" + id + ".json",
		"badges-latency/" + id + ".json", "badges-certificate/" + id + ".json", "badges-strip/" + id + ".svg"}
	listed := s.run.listedAt(l, now)
	for _, f := range files {
		_, err := os.Stat(filepath.Join(s.out, f))
		if listed && err != nil {
			t.Errorf("%s listed at %s: %v", id, now.Format(time.RFC3339), err)
		} else if !listed && err == nil {
			t.Errorf("%s not listed at %s: %s published", id, now.Format(time.RFC3339), f)
		}
	}
	if !listed {
		return
	}
	b, err := os.ReadFile(filepath.Join(s.out, "servers", id+".json"))
	if err != nil {
		return
	}
	var f record.ServerFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	var mine []checked
	for _, c := range checks {
		if c.id == id {
			mine = append(mine, c)
		}
	}
	// What its server received: a handshake at least for each check, and
	// every request the results say were sent.
	hellos, requests := sv.counts()
	sent := 0
	for _, c := range mine {
		sent += c.requests
	}
	if hellos < len(mine) || requests != sent {
		t.Errorf("%s at %s: the server saw %d handshakes and %d requests; the %d checks made say they sent %d", id, now.Format(time.RFC3339), hellos, requests, len(mine), sent)
	}
	// Its status.
	want := data.Pending
	if len(mine) > 0 {
		want = mine[len(mine)-1].want
		if f.LastCheck == nil || !f.LastCheck.Equal(mine[len(mine)-1].started.Truncate(time.Millisecond)) {
			t.Errorf("%s at %s: last check %v, want %s", id, now.Format(time.RFC3339), f.LastCheck, mine[len(mine)-1].started)
		}
	}
	if s.run.pausedAt(l, now) {
		want = data.Paused
	}
	if f.Status != want {
		t.Errorf("%s at %s: status %s, want %s", id, now.Format(time.RFC3339), f.Status, want)
	}
	// Uptime windows and the strip's days, against the checks made.
	count := func(from, to time.Time) (counted, answered int) {
		for _, c := range mine {
			if !c.started.Before(from) && c.started.Before(to) && (c.want == data.Working || c.want == data.NeedsKey || c.want == data.Failing) {
				counted++
				if c.want.Answered() {
					answered++
				}
			}
		}
		return counted, answered
	}
	for _, w := range []struct {
		name string
		u    record.Uptime
		d    time.Duration
	}{{"24h", f.Uptime.Day, 24 * time.Hour}, {"7d", f.Uptime.Week, 7 * 24 * time.Hour}, {"30d", f.Uptime.Month, 30 * 24 * time.Hour}} {
		c, a := count(now.Add(-w.d), now.Add(time.Second))
		if w.u.Counted != c || w.u.Answered != a {
			t.Errorf("%s at %s: uptime %s counts %d answered of %d, the checks made %d of %d", id, now.Format(time.RFC3339), w.name, w.u.Answered, w.u.Counted, a, c)
		}
	}
	for _, d := range f.Daily {
		day, err := time.Parse("2006-01-02", d.Date)
		if err != nil {
			t.Fatalf("%s: day %q", id, d.Date)
		}
		c, a := count(day, day.Add(24*time.Hour))
		if d.Counted != c || d.Answered != a || c > 0 && !d.Listed {
			t.Errorf("%s at %s: strip day %s counts %d answered of %d (listed %v), the checks made %d of %d", id, now.Format(time.RFC3339), d.Date, d.Answered, d.Counted, d.Listed, a, c)
		}
	}
	// The outage: one failing incident, from its first check to the first
	// after it.
	for i, p := range l.phases {
		if p.kind != down || i+1 == len(l.phases) {
			continue
		}
		from, to := s.run.at(p.at), s.run.at(l.phases[i+1].at)
		slack := s.run.cadence() + time.Hour
		if now.Before(to.Add(slack)) {
			continue
		}
		found := false
		for _, in := range f.Incidents {
			if in.Status == data.Failing && !in.Start.Before(from) && in.Start.Before(from.Add(slack)) &&
				in.End != nil && !in.End.Before(to) && in.End.Before(to.Add(slack)) {
				found = true
			}
		}
		if !found && from.After(now.Add(-365*24*time.Hour)) {
			t.Errorf("%s at %s: no failing incident from %s to %s in %+v", id, now.Format(time.RFC3339), from, to, f.Incidents)
		}
	}
	// Tool changes: one each time a check lists other tools than the
	// check before it, as the table changes them.
	changes := 0
	for i := 1; i < len(mine); i++ {
		if !slices.Equal(s.run.phaseAt(l, mine[i].started).tools, s.run.phaseAt(l, mine[i-1].started).tools) {
			changes++
		}
	}
	if len(f.ToolDefs.Changes) != changes {
		t.Errorf("%s at %s: %d tool changes, the table made %d", id, now.Format(time.RFC3339), len(f.ToolDefs.Changes), changes)
	}
	// Certificate warnings: dated no earlier than the first check, each at
	// the day its days left came down or when a check first saw it.
	if l.certEnd != 0 && len(mine) > 0 {
		first := mine[0].started
		for _, w := range f.CertWarnings {
			due := w.NotAfter.AddDate(0, 0, -w.DaysLeft).Add(-24 * time.Hour)
			if w.At.Before(first.Truncate(time.Millisecond)) || w.At.Before(due) {
				t.Errorf("%s at %s: warning %d days left dated %s, before its first check %s or its day %s", id, now.Format(time.RFC3339), w.DaysLeft, w.At, first, due)
			}
		}
		// Checked within its last three days before the renewal: warned,
		// and the warning outlives the certificate.
		end := s.run.at(l.certEnd)
		warned := false
		for _, c := range mine {
			warned = warned || !c.started.Before(end.Add(-3*24*time.Hour)) && c.started.Before(end.Add(-24*time.Hour))
		}
		if warned && now.After(end) && len(f.CertWarnings) == 0 {
			t.Errorf("%s at %s: no certificate warning kept after the renewal before %s", id, now.Format(time.RFC3339), end)
		}
	}
	s.checkFeed(id, now)
}

// checkFeed holds feeds/<id>.atom to every entry it ever published (while
// it has fewer than feed.ServerLen) and new entries to dates after the
// previous checkpoint's publish, a day of slack for the midnight a
// certificate's days left came down.
func (s *soak) checkFeed(id string, now time.Time) {
	b, err := os.ReadFile(filepath.Join(s.out, "feeds", id+".atom"))
	if err != nil {
		return
	}
	var atom struct {
		Entries []struct {
			ID      string `xml:"id"`
			Updated string `xml:"updated"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(b, &atom); err != nil {
		s.t.Fatalf("%s feed: %v", id, err)
	}
	seen := s.feeds[id]
	if seen == nil {
		seen = map[string]time.Time{}
		s.feeds[id] = seen
	}
	present := map[string]bool{}
	for _, e := range atom.Entries {
		at, err := time.Parse(time.RFC3339, e.Updated)
		if err != nil {
			s.t.Errorf("%s feed entry %s: date %q", id, e.ID, e.Updated)
			continue
		}
		present[e.ID] = true
		if old, ok := seen[e.ID]; ok {
			if !old.Equal(at) {
				s.t.Errorf("%s feed entry %s redated from %s to %s", id, e.ID, old, at)
			}
			continue
		}
		if !s.last.IsZero() && at.Before(s.last.Add(-24*time.Hour)) {
			s.t.Errorf("%s at %s: new feed entry %s dated %s, before the previous checkpoint %s", id, now.Format(time.RFC3339), e.ID, at, s.last)
		}
		seen[e.ID] = at
	}
	if len(atom.Entries) < feed.ServerLen {
		for e, at := range seen {
			if !present[e] {
				s.t.Errorf("%s at %s: feed entry %s of %s lost", id, now.Format(time.RFC3339), e, at)
			}
		}
	}
}

// rebuild publishes a copy of the data directory from nothing, as a full
// rebuild (no site record, no output), at the same time, and wants the
// incremental site byte for byte.
func (s *soak) rebuild(m time.Time) {
	scratch := s.t.TempDir()
	dir, out := filepath.Join(scratch, "data"), filepath.Join(scratch, "out")
	testutil.CopyTree(s.t, s.dir, dir)
	for _, p := range []string{"state.bin", "state-delta.bin", "older", "feed.json"} {
		if err := os.RemoveAll(filepath.Join(dir, "site", p)); err != nil {
			s.t.Fatal(err)
		}
	}
	st, err := site.Publish(s.t.Context(), s.siteConfig(out, dir))
	if err != nil || !st.Rebuilt {
		s.t.Fatalf("rebuild at %s: %+v %v", m, st, err)
	}
	testutil.DiffTrees(s.t, "the full rebuild at "+m.Format(time.RFC3339)+" against the incremental site", testutil.MustTree(s.t, s.out), testutil.MustTree(s.t, out))
	os.RemoveAll(scratch)
}
