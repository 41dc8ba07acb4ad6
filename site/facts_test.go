package site

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/badge"
	"plug.directory/prober/site/feed"
	"plug.directory/prober/site/record"
)

// certFixture is a fixture with one server, kilo, and readers of its
// published certificate facts: its feed's entries, its badge.
type certFixture struct {
	*fixture
	srv data.Server
}

func newCertFixture(t *testing.T, added time.Time) certFixture {
	t.Helper()
	f := certFixture{newFixture(t), data.Server{ID: "kilo", Rank: 5, URL: "https://kilo.example.com/mcp", Added: added}}
	f.writeServers([]data.Server{f.srv})
	return f
}

// check journals a working check of kilo at t that sees a certificate
// expiring at notAfter.
func (f certFixture) check(t time.Time, notAfter time.Time) data.Result {
	r := result(f.srv, t, data.Working, "")
	r.TLS.NotAfter = notAfter
	f.results(r)
	return r
}

// feedEntryRead is one entry of an Atom feed as a test reads it.
type feedEntryRead struct{ ID, Title, Updated string }

// feed returns the entries of kilo's feed, newest first, after
// validating it.
func (f certFixture) feed(t *testing.T) []feedEntryRead {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.out, "feeds", "kilo.atom"))
	if err != nil {
		t.Fatal(err)
	}
	validateAtom(t, "kilo.atom", b)
	var d atomDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []feedEntryRead
	for _, e := range d.Entries {
		out = append(out, feedEntryRead{e.ID, e.Title, e.Updated})
	}
	return out
}

// certEntries returns the certificate entries of kilo's feed as
// "title@updated", newest first.
func (f certFixture) certEntries(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, e := range f.feed(t) {
		if strings.Contains(e.ID, "/certificate-") {
			out = append(out, e.Title+"@"+e.Updated)
		}
	}
	return out
}

func (f certFixture) badge(t *testing.T) badge.Badge {
	t.Helper()
	var b badge.Badge
	mustReadJSON(t, filepath.Join(f.out, "badges-certificate", "kilo.json"), &b)
	return b
}

// TestPublishCertificate follows one server's certificate to its end
// without a new check, then a check that meets it expired:
// the file counts its days left in calendar days from 14 days before
// the day of expiry, rendered again at each midnight ("expires in 2
// days", "expires tomorrow", "expires today"), the server's feed gains an
// entry at the midnight of 14 and of 3 days, the badge follows, and once it
// has expired every word says failing, as table O does. Beyond the warning
// the file derives nothing from the date: days_left is null and the
// message "valid until" its day.
func TestPublishCertificate(t *testing.T) {
	t.Parallel()
	f := newCertFixture(t, fixNow.Add(-24*time.Hour))
	notAfter := fixNow.Add(20*24*time.Hour + 6*time.Hour) // 2026-12-22 18:00
	day := func(d int, hm time.Duration) time.Time { return time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC).Add(hm) }
	r := f.check(fixNow.Add(-time.Hour), notAfter)
	valid := badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "valid until 2026-12-22", Color: badge.CertColorValid}
	warn14 := "kilo: certificate expires in 14 days@2026-12-08T00:00:00.000Z"
	warn3 := "kilo: certificate expires in 3 days@2026-12-19T00:00:00.000Z"
	steps := []struct {
		name    string
		at      time.Time
		days    int // -1: null
		warning bool
		message string
		badge   badge.Badge
		feed    []string // its certificate entries, newest first
	}{
		{"20_days_left_not_derived", fixNow, -1, false, "valid until 2026-12-22", valid, nil},
		{"15_days_left_no_warning_yet", day(7, 23*time.Hour+59*time.Minute), -1, false, "valid until 2026-12-22", valid, nil},
		{"14_days_left_warns_at_midnight", day(8, 0), 14, true, "expires in 14 days",
			badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "expires in 14 days", Color: badge.CertColorWarning}, []string{warn14}},
		{"9_days_left", day(13, time.Hour), 9, true, "expires in 9 days",
			badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "expires in 9 days", Color: badge.CertColorWarning}, []string{warn14}},
		{"3_days_left", day(19, 0), 3, true, "expires in 3 days",
			badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "expires in 3 days", Color: badge.CertColorLast}, []string{warn3, warn14}},
		{"2_days_left", day(20, 23*time.Hour), 2, true, "expires in 2 days",
			badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "expires in 2 days", Color: badge.CertColorLast}, []string{warn3, warn14}},
		{"tomorrow", day(21, 0), 1, true, "expires tomorrow",
			badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "expires tomorrow", Color: badge.CertColorLast}, []string{warn3, warn14}},
		{"today", day(22, 0), 0, true, "expires today",
			badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "expires today", Color: badge.CertColorLast}, []string{warn3, warn14}},
		{"O_expired_is_failing", notAfter, -1, true, "failing: " + data.DetailCertExpired,
			badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "failing: " + data.DetailCertExpired, Color: badge.CertColorExpired}, []string{warn3, warn14}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			f.now = st.at
			stats := f.MustPublish()
			if st.at != fixNow && st.warning && stats.Rendered != 1 {
				t.Errorf("rendered %d servers; the certificate's day changed, so kilo's file must be", stats.Rendered)
			}
			sf := readServerFile(t, f.fixture, "kilo")
			c := sf.Certificate
			days := -1
			if c != nil && c.DaysLeft != nil {
				days = *c.DaysLeft
			}
			if c == nil || days != st.days || c.Warning != st.warning || c.Message != st.message || !c.NotAfter.Equal(notAfter) ||
				c.Expired != (st.message == "failing: "+data.DetailCertExpired) || c.TLSVersion == nil || *c.TLSVersion != "TLS 1.3" || c.Issuer != r.TLS.Issuer {
				t.Errorf("certificate %+v (days left %d); want %d days left, warning %v, %q", c, days, st.days, st.warning, st.message)
			}
			if b := f.badge(t); b != st.badge {
				t.Errorf("badge %+v, want %+v", b, st.badge)
			}
			if got := f.certEntries(t); strings.Join(got, "|") != strings.Join(st.feed, "|") {
				t.Errorf("feed %q, want %q", got, st.feed)
			}
			if len(sf.CertWarnings) != len(st.feed) {
				t.Errorf("certificate_warnings %+v, want %d as the feed's", sf.CertWarnings, len(st.feed))
			}
			page, err := os.ReadFile(filepath.Join(f.out, "servers", "kilo.html"))
			if err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(string(page), `<p class="warn">Its certificate`); warned != st.warning {
				t.Errorf("page warns: %v, want %v", warned, st.warning)
			}
			validateTree(t, f.out)
		})
	}
	t.Run("O_check_meets_the_expired_certificate", func(t *testing.T) {
		failed := result(f.srv, f.now, data.Failing, data.DetailCertExpired)
		failed.TLS = &data.TLSInfo{NotAfter: notAfter, Issuer: r.TLS.Issuer, Names: r.TLS.Names} // no version: the handshake failed
		failed.Timings = &data.Timings{Connect: fixDur(20 * time.Millisecond), TLS: fixDur(40 * time.Millisecond)}
		f.results(failed)
		f.now = f.now.Add(time.Minute)
		f.MustPublish()
		sf := readServerFile(t, f.fixture, "kilo")
		if sf.Status != data.Failing || record.ValueOf(sf.Detail) != data.DetailCertExpired || sf.Certificate == nil || !sf.Certificate.Expired ||
			sf.Certificate.Message != "failing: "+data.DetailCertExpired || sf.Certificate.TLSVersion != nil || sf.Certificate.DaysLeft != nil {
			t.Errorf("status %s %q, certificate %+v; want failing with the check's words", sf.Status, record.ValueOf(sf.Detail), sf.Certificate)
		}
		if tm := sf.LastResult.Timings; tm == nil || tm.DNSMS != nil || *tm.TLSMS != 40 || tm.WaitMS != nil || len(tm.FirstByteMS) != 0 {
			t.Errorf("timings %+v: want the failed handshake's and null where nothing happened", tm)
		}
	})
}

// TestPublishCertificateNoExpiry: a certificate valid to 9999-12-31 (RFC
// 5280's "no expiry", common on self-signed ones) is valid until then:
// no days left to overflow (NotAfter.Sub saturated to -106751 days), no
// warning, a green badge, no feed entry.
func TestPublishCertificateNoExpiry(t *testing.T) {
	t.Parallel()
	f := newCertFixture(t, fixNow.Add(-24*time.Hour))
	f.check(fixNow.Add(-time.Hour), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))
	f.MustPublish()
	c := readServerFile(t, f.fixture, "kilo").Certificate
	if c == nil || c.DaysLeft != nil || c.Warning || c.Expired || c.Message != "valid until 9999-12-31" {
		t.Errorf("certificate %+v; want valid until 9999-12-31, no warning", c)
	}
	if b, want := f.badge(t), (badge.Badge{SchemaVersion: 1, Label: badge.CertificateLabel, Message: "valid until 9999-12-31", Color: badge.CertColorValid}); b != want {
		t.Errorf("badge %+v, want %+v", b, want)
	}
	if got := f.certEntries(t); len(got) != 0 {
		t.Errorf("feed has certificate entries %q, want none", got)
	}
	validateTree(t, f.out)
}

// TestPublishCertificateWarningsKept: a warning once in a server's feed
// stays there when the certificate changes (renewed), for the feed's
// retention, and a rebuild from the history gives it too; the renewed
// certificate gets its own warnings when its time comes.
func TestPublishCertificateWarningsKept(t *testing.T) {
	t.Parallel()
	f := newCertFixture(t, fixNow.Add(-24*time.Hour))
	old := fixNow.Add(10*24*time.Hour + 6*time.Hour) // 2026-12-12 18:00: 10 days left at its first check
	f.check(fixNow.Add(-48*time.Hour), old)          // 2026-11-30: 12 days left, first seen within the warning
	f.MustPublish()
	f.now = time.Date(2026, 12, 9, 6, 0, 0, 0, time.UTC) // past the 3 days' midnight
	f.MustPublish()
	before := f.certEntries(t)
	want := []string{"kilo: certificate expires in 3 days@2026-12-09T00:00:00.000Z", "kilo: certificate expires in 12 days@2026-11-30T12:00:00.000Z"}
	if strings.Join(before, "|") != strings.Join(want, "|") {
		t.Fatalf("feed before the renewal %q, want %q", before, want)
	}
	renewed := time.Date(2027, 3, 9, 18, 0, 0, 0, time.UTC)
	f.now = f.now.Add(time.Hour)
	f.check(f.now.Add(-time.Minute), renewed)
	f.MustPublish()
	if got := f.certEntries(t); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("feed after the renewal %q, want the warnings kept: %q", got, want)
	}
	if c := readServerFile(t, f.fixture, "kilo").Certificate; c == nil || !c.NotAfter.Equal(renewed) || c.Warning {
		t.Errorf("certificate %+v, want the renewed one", c)
	}
	// The renewed certificate's own warning at its 14 days' midnight, the
	// old ones still there; a rebuild gives the same feed.
	f.now = time.Date(2027, 2, 23, 0, 0, 1, 0, time.UTC)
	f.MustPublish()
	want = append([]string{"kilo: certificate expires in 14 days@2027-02-23T00:00:00.000Z"}, want...)
	incremental := f.certEntries(t)
	if strings.Join(incremental, "|") != strings.Join(want, "|") {
		t.Errorf("feed at the renewed one's warning %q, want %q", incremental, want)
	}
	for _, p := range []string{f.out, data.Dir(f.dir).SiteStore()} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if st := f.MustPublish(); !st.Rebuilt {
		t.Fatal("not a rebuild")
	}
	if got := f.certEntries(t); strings.Join(got, "|") != strings.Join(incremental, "|") {
		t.Errorf("rebuilt feed %q, want the incremental one %q", got, incremental)
	}
	validateTree(t, f.out)
}

// TestPublishCertificateWarningDated: a warning is dated when it was seen,
// never before: a server listed and first checked when its certificate
// has 9 days left gets one entry, "expires in 9 days", at that check (not
// "14 days" five days before it was listed); one first seen 2 days before
// its day gets "expires in 2 days" at that check and nothing dated
// earlier; one first seen expired gets none.
func TestPublishCertificateWarningDated(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		notAfter time.Time
		want     []string // certificate entries of the feed after a publish at fixNow + 2 days
	}{
		{"P1_9_days_left_at_first_check", time.Date(2026, 12, 11, 9, 0, 0, 0, time.UTC),
			[]string{"kilo: certificate expires in 9 days@2026-12-02T11:00:00.000Z"}},
		{"P1_5_days_then_3", time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC),
			[]string{"kilo: certificate expires in 3 days@2026-12-04T00:00:00.000Z", "kilo: certificate expires in 5 days@2026-12-02T11:00:00.000Z"}},
		{"P1_2_days_left_at_first_check", time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC),
			[]string{"kilo: certificate expires in 2 days@2026-12-02T11:00:00.000Z"}},
		{"P1_expired_at_first_check", time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCertFixture(t, fixNow.Add(-2*time.Hour)) // listed at 10:00, checked at 11:00
			f.check(fixNow.Add(-time.Hour), tc.notAfter)
			f.MustPublish()
			f.now = fixNow.Add(48 * time.Hour)
			f.MustPublish()
			if got := f.certEntries(t); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("feed %q, want %q", got, tc.want)
			}
			listed := fixNow.Add(-2 * time.Hour)
			for _, w := range readServerFile(t, f.fixture, "kilo").CertWarnings {
				if w.At.Before(listed) {
					t.Errorf("warning %+v dated before the server was listed, %v", w, listed)
				}
			}
		})
	}
}

// TestPublishPhases: each check's phases are in its history and last
// result, and the daily series has their p50 and p95 (nearest rank) over
// the day's answered checks; a check measured before
// them has none.
func TestPublishPhases(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := data.Server{ID: "lima", Rank: 5, URL: "https://lima.example.com/mcp", Added: fixNow.Add(-24 * time.Hour)}
	f.writeServers([]data.Server{srv})
	day := fixNow.Truncate(24 * time.Hour)
	var rs []data.Result
	for i := range 10 { // TLS 10..100 ms, first bytes 100 and i ms
		r := result(srv, day.Add(time.Duration(i)*time.Minute), data.Working, "")
		r.Timings.TLS = fixDur(time.Duration(10*(i+1)) * time.Millisecond)
		r.Timings.FirstByte = []time.Duration{100 * time.Millisecond, time.Duration(i) * time.Millisecond}
		rs = append(rs, r)
	}
	old := result(srv, day.Add(20*time.Minute), data.Working, "")
	old.Timings = nil // checked before timings were measured
	refused := result(srv, day.Add(30*time.Minute), data.Refused, "HTTP 429")
	refused.Timings = &data.Timings{TLS: fixDur(time.Second)} // not answered: not in the series
	f.results(append(rs, old, refused)...)
	f.fold()
	f.MustPublish()
	sf := readServerFile(t, f, "lima")
	d := sf.Daily[len(sf.Daily)-1]
	p := d.Phases
	if p == nil || p.TLS == nil || *p.TLS != (record.Spread{P50: 50, P95: 100}) || *p.DNS != (record.Spread{P50: 12, P95: 12}) || *p.Wait != (record.Spread{P50: 104, P95: 109}) {
		t.Fatalf("phases of the day %+v", p)
	}
	if h := sf.History; len(h) != 12 || h[0].Timings == nil || *h[0].Timings.TLSMS != 1000 || h[1].Timings != nil || *h[2].Timings.WaitMS != 109 {
		t.Errorf("history timings: %d checks, %+v %+v %+v", len(h), h[0].Timings, h[1].Timings, h[2].Timings)
	}
	validateTree(t, f.out)
}

// TestPublishCertificateWarningsFromOlderFile: a server file published
// before the warnings were kept in it (no certificate_warnings) keeps the
// warnings its feed showed: the next render takes them from its
// certificate, none vanishes from the feed.
func TestPublishCertificateWarningsFromOlderFile(t *testing.T) {
	t.Parallel()
	f := newCertFixture(t, fixNow.Add(-24*time.Hour))
	notAfter := fixNow.Add(20 * 24 * time.Hour) // 2026-12-22 12:00
	f.check(fixNow.Add(-time.Hour), notAfter)
	f.check(time.Date(2026, 12, 8, 0, 30, 0, 0, time.UTC), notAfter) // seen again after its 14 days' midnight
	f.now = time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	f.MustPublish()
	want := []string{"kilo: certificate expires in 14 days@2026-12-08T00:00:00.000Z"}
	if got := f.certEntries(t); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("feed %q, want %q", got, want)
	}
	path := filepath.Join(f.out, "servers", "kilo.json")
	var file map[string]json.RawMessage
	mustReadJSON(t, path, &file)
	delete(file, "certificate_warnings") // as published before
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Hour)
	f.check(f.now.Add(-time.Minute), notAfter)
	if st := f.MustPublish(); st.Rendered != 1 {
		t.Fatalf("rendered %d, want kilo", st.Rendered)
	}
	if got := f.certEntries(t); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("feed after a file without certificate_warnings %q, want %q", got, want)
	}
	if ws := readServerFile(t, f.fixture, "kilo").CertWarnings; len(ws) != 1 || ws[0].DaysLeft != 14 {
		t.Errorf("certificate_warnings %+v, want the 14 days' one", ws)
	}
}

// TestPublishCertificateWarningsBounded: a server that presents another
// certificate within the warning at every check (its bytes are its own
// to choose) gains a warning a check, and keeps the newest ServerLen:
// its file and its feed stay bounded, and the rebuild gives the same.
func TestPublishCertificateWarningsBounded(t *testing.T) {
	t.Parallel()
	f := newCertFixture(t, fixNow.AddDate(0, 0, -1))
	var rs []data.Result
	n := feed.ServerLen + 50
	for i := range n {
		r := result(f.srv, fixNow.Add(-time.Duration(n-i)*time.Minute), data.Working, "")
		r.TLS.NotAfter = fixNow.Add(5*24*time.Hour + time.Duration(i)*time.Second) // another one each time
		rs = append(rs, r)
	}
	f.results(rs...)
	f.MustPublish()
	ws := readServerFile(t, f.fixture, "kilo").CertWarnings
	if len(ws) != feed.ServerLen || !ws[0].At.Equal(rs[n-1].Started) || !ws[len(ws)-1].At.Equal(rs[n-feed.ServerLen].Started) {
		t.Fatalf("%d warnings, newest %v, oldest %v; want the newest %d, %v to %v", len(ws), ws[0].At, ws[len(ws)-1].At,
			feed.ServerLen, rs[n-1].Started, rs[n-feed.ServerLen].Started)
	}
	if es := f.feed(t); len(es) != feed.ServerLen {
		t.Errorf("feed of %d entries, want %d", len(es), feed.ServerLen)
	}
	incremental, err := os.ReadFile(filepath.Join(f.out, "servers", "kilo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(f.out); err != nil {
		t.Fatal(err)
	}
	f.MustPublish()
	if rebuilt, _ := os.ReadFile(filepath.Join(f.out, "servers", "kilo.json")); !bytes.Equal(rebuilt, incremental) {
		t.Error("kilo.json differs after a rebuild")
	}
}
