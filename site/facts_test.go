package site

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestPublishCertificate follows one server's certificate to its end
// without a new check, then a check that meets it expired (issue 19 point
// 1): the file says its days left as they go, warns from 14 days, the
// server's feed gains an entry at 14 and at 3 days, the badge follows, and
// once it has expired every word says failing, as table O does.
func TestPublishCertificate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := data.Server{ID: "kilo", Rank: 5, URL: "https://kilo.example.com/mcp", Added: fixNow.Add(-24 * time.Hour)}
	f.writeServers([]data.Server{srv})
	notAfter := fixNow.Add(20*24*time.Hour + 6*time.Hour)
	r := result(srv, fixNow.Add(-time.Hour), data.Working, "")
	r.TLS.NotAfter = notAfter
	f.results(r)
	readFeed := func() []string {
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
		var titles []string
		for _, e := range d.Entries {
			titles = append(titles, e.Title)
		}
		return titles
	}
	readBadge := func() Badge {
		t.Helper()
		var b Badge
		mustReadJSON(t, filepath.Join(f.out, "badges-certificate", "kilo.json"), &b)
		return b
	}
	steps := []struct {
		name    string
		at      time.Time
		days    int
		warning bool
		message string
		badge   Badge
		feed    []string // newest first
	}{
		{"20_days_left", fixNow, 20, false, "expires in 20 days",
			Badge{1, CertificateBadgeLabel, "valid until " + notAfter.Format(time.DateOnly), certColorValid},
			[]string{"kilo: working"}},
		{"15_days_left_no_warning_yet", notAfter.Add(-15*24*time.Hour - time.Minute), 15, false, "expires in 15 days",
			Badge{1, CertificateBadgeLabel, "valid until " + notAfter.Format(time.DateOnly), certColorValid},
			[]string{"kilo: working"}},
		{"14_days_left_warns", notAfter.Add(-15 * 24 * time.Hour), 14, true, "expires in 14 days",
			Badge{1, CertificateBadgeLabel, "expires in 14 days", certColorWarning},
			[]string{"kilo: certificate expires in 14 days", "kilo: working"}},
		{"9_days_left", notAfter.Add(-9*24*time.Hour - time.Hour), 9, true, "expires in 9 days",
			Badge{1, CertificateBadgeLabel, "expires in 9 days", certColorWarning},
			[]string{"kilo: certificate expires in 14 days", "kilo: working"}},
		{"3_days_left", notAfter.Add(-3*24*time.Hour - time.Hour), 3, true, "expires in 3 days",
			Badge{1, CertificateBadgeLabel, "expires in 3 days", certColorLast},
			[]string{"kilo: certificate expires in 3 days", "kilo: certificate expires in 14 days", "kilo: working"}},
		{"O_expired_is_failing", notAfter.Add(time.Minute), -1, true, "failing: " + data.DetailCertExpired,
			Badge{1, CertificateBadgeLabel, "failing: " + data.DetailCertExpired, certColorExpired},
			[]string{"kilo: certificate expires in 3 days", "kilo: certificate expires in 14 days", "kilo: working"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			f.now = st.at
			stats := f.MustPublish()
			if st.at != fixNow && stats.Rendered != 1 {
				t.Errorf("rendered %d servers; the certificate's day changed, so kilo's file must be", stats.Rendered)
			}
			sf := readServerFile(t, f, "kilo")
			c := sf.Certificate
			if c == nil || c.DaysLeft != st.days || c.Warning != st.warning || c.Message != st.message || !c.NotAfter.Equal(notAfter) ||
				c.Expired != (st.days < 0) || c.TLSVersion == nil || *c.TLSVersion != "TLS 1.3" || c.Issuer != r.TLS.Issuer {
				t.Errorf("certificate %+v; want %d days left, warning %v, %q", c, st.days, st.warning, st.message)
			}
			if b := readBadge(); b != st.badge {
				t.Errorf("badge %+v, want %+v", b, st.badge)
			}
			if got := readFeed(); strings.Join(got, "|") != strings.Join(st.feed, "|") {
				t.Errorf("feed %q, want %q", got, st.feed)
			}
			page, err := os.ReadFile(filepath.Join(f.out, "servers", "kilo.html"))
			if err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(string(page), `<p class="warn">Its certificate`); warned != st.warning {
				t.Errorf("page warns: %v, want %v", warned, st.warning)
			}
		})
	}
	t.Run("O_check_meets_the_expired_certificate", func(t *testing.T) {
		failed := result(srv, f.now, data.Failing, data.DetailCertExpired)
		failed.TLS = &data.TLSInfo{NotAfter: notAfter, Issuer: r.TLS.Issuer, Names: r.TLS.Names} // no version: the handshake failed
		failed.Timings = &data.Timings{Connect: fixDur(20 * time.Millisecond), TLS: fixDur(40 * time.Millisecond)}
		f.results(failed)
		f.now = f.now.Add(time.Minute)
		f.MustPublish()
		sf := readServerFile(t, f, "kilo")
		if sf.Status != data.Failing || valueOf(sf.Detail) != data.DetailCertExpired || sf.Certificate == nil || !sf.Certificate.Expired ||
			sf.Certificate.Message != "failing: "+data.DetailCertExpired || sf.Certificate.TLSVersion != nil {
			t.Errorf("status %s %q, certificate %+v; want failing with the check's words", sf.Status, valueOf(sf.Detail), sf.Certificate)
		}
		if tm := sf.LastResult.Timings; tm == nil || tm.DNSMS != nil || *tm.TLSMS != 40 || tm.WaitMS != nil || len(tm.FirstByteMS) != 0 {
			t.Errorf("timings %+v: want the failed handshake's and null where nothing happened", tm)
		}
	})
}

// TestPublishPhases: each check's phases are in its history and last
// result, and the daily series has their p50 and p95 (nearest rank) over
// the day's answered checks (issue 19 point 2); a check measured before
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
	old.Timings = nil // before issue 19
	refused := result(srv, day.Add(30*time.Minute), data.Refused, "HTTP 429")
	refused.Timings = &data.Timings{TLS: fixDur(time.Second)} // not answered: not in the series
	f.results(append(rs, old, refused)...)
	f.fold()
	f.MustPublish()
	sf := readServerFile(t, f, "lima")
	d := sf.Daily[len(sf.Daily)-1]
	p := d.Phases
	if p == nil || p.TLS == nil || *p.TLS != (Spread{50, 100}) || *p.DNS != (Spread{12, 12}) || *p.Wait != (Spread{104, 109}) {
		t.Fatalf("phases of the day %+v", p)
	}
	if h := sf.History; len(h) != 12 || h[0].Timings == nil || *h[0].Timings.TLSMS != 1000 || h[1].Timings != nil || *h[2].Timings.WaitMS != 109 {
		t.Errorf("history timings: %d checks, %+v %+v %+v", len(h), h[0].Timings, h[1].Timings, h[2].Timings)
	}
	validateTree(t, f.out)
}
