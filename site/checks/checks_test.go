package checks

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// fixContact is the operator's contact the tests' pages name.
const fixContact = "stop-checks@example.org"

// TestChecksPageFollowsConstants proves that every number of the page comes
// from the facts: changing a fact changes the page, and no number appears
// that the facts do not hold.
func TestChecksPageFollowsConstants(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(*Probe)
		want   string
	}{
		{"S1_tier_rank", func(p *Probe) { p.Tiers[0].MaxRank = 5000 }, "among the 5,000 highest ranked"},
		{"S1_hourly_cadence", func(p *Probe) { p.Tiers[0].CadenceSeconds = 7200 }, "checked once every two hours, every other one once a day"},
		{"S1_daily_cadence", func(p *Probe) { p.Tiers[1].CadenceSeconds = 12 * 3600 }, "every other one once every 12 hours"},
		{"S3_average_spacing", func(p *Probe) { p.HostCaps.AverageSpacingSeconds = 60 }, "at most once every one minute on average"},
		{"S3_max_per_day", func(p *Probe) { p.HostCaps.MaxPerDay = 4000 }, "never more than 4,000 times a day"},
		{"S3_min_spacing", func(p *Probe) { p.HostCaps.MinSpacingSeconds = 2 }, "never more than once every two seconds"},
		{"S5_new_spacing", func(p *Probe) { p.NewServers.SpacingSeconds = 45 }, "they are checked 45 seconds apart"},
		{"S6_retry_after", func(p *Probe) { p.Retry.AfterFailureSeconds = 600 }, "is repeated 10 minutes later. While a server keeps failing it is checked every 10 minutes"},
		{"S6_retry_window", func(p *Probe) { p.Retry.WindowSeconds = 7200 }, "for the first two hours"},
		{"N1_user_agent", func(p *Probe) { p.UserAgentFormat = "x-prober/<version>" }, "    x-prober/<version>\n"},
		{"N11_source_address", func(p *Probe) { p.SourceAddresses = []string{"192.0.2.1", "192.0.2.2"} }, "    192.0.2.1\n    192.0.2.2\n"},
		{"N3_methods", func(p *Probe) { p.Calls.RPCMethods = []string{"initialize"} }, "requires:\n\n- initialize\n\nA server"},
		{"N4_discover_from", func(p *Probe) { p.Calls.DiscoverFrom = "2027-01-01" }, "protocol version 2027-01-01 or later"},
		{"N7_ports", func(p *Probe) { p.Limits.Ports = []int{443} }, "over HTTPS on ports 443, follows"},
		{"N8_redirects", func(p *Probe) { p.Limits.MaxRedirects = 5 }, "follows at most five redirects"},
		{"N9_answer_size", func(p *Probe) { p.Limits.MaxAnswerBytes = 2 << 20 }, "reads at most 2 MB of an answer"},
		{"N10_timeout", func(p *Probe) { p.Limits.CheckTimeoutSeconds = 30 }, "gives up after 30 seconds"},
		{"S8_pause_within", func(p *Probe) { p.PauseWithinSecs = 48 * 3600 }, "within 48 hours"},
		{"O_labels", func(p *Probe) { p.Outcomes[1].Label = "wants a key" }, `we show "wants a key"`},
	}
	base, err := Text(Facts(fixContact))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Facts(fixContact)
			c.change(&p)
			got, err := Text(p)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(got, base) {
				t.Fatal("changing the fact did not change the page")
			}
			if !strings.Contains(string(got), c.want) {
				t.Errorf("page does not say %q:\n%s", c.want, got)
			}
		})
	}
	t.Run("P2_every_number_is_a_fact", func(t *testing.T) {
		// The only digits of the page are those the facts render; the
		// constants as numbers below.
		allowed := map[string]bool{"2,000": true, "30": true, "3,000": true, "2026-07-28": true, "443": true, "8443": true,
			"1": true, "45": true, "24": true, "87.236.197.37": true}
		for _, m := range regexp.MustCompile(`\b[0-9][0-9.,-]*[0-9]\b|\b[0-9]\b`).FindAllString(string(base), -1) {
			if !allowed[m] {
				t.Errorf("page holds the number %q, not one of the facts", m)
			}
		}
		p := Facts(fixContact)
		for _, want := range []string{Grouped(int64(p.Tiers[0].MaxRank)), Grouped(int64(p.HostCaps.MaxPerDay)), span(p.Limits.CheckTimeoutSeconds),
			span(p.PauseWithinSecs), span(p.Retry.AfterFailureSeconds), p.SourceAddresses[0], p.Calls.DiscoverFrom} {
			if !strings.Contains(string(base), want) {
				t.Errorf("page does not say %q", want)
			}
		}
	})
	t.Run("P2_missing_fact_is_an_error", func(t *testing.T) {
		p := Facts(fixContact)
		p.Outcomes = p.Outcomes[:1]
		if _, err := Text(p); err == nil || !strings.Contains(err.Error(), "needs_key") {
			t.Errorf("err = %v, want one naming the missing outcome", err)
		}
	})
}

func TestWords(t *testing.T) {
	t.Parallel()
	cases := []struct {
		got, want string
	}{
		{number(3), "three"}, {number(9), "nine"}, {number(10), "10"}, {Grouped(1000000), "1,000,000"}, {Grouped(999), "999"},
		{span(300), "five minutes"}, {span(30), "30 seconds"}, {span(86400), "24 hours"}, {span(3600), "one hour"}, {span(1), "one second"},
		{firstSpan(3600), "hour"}, {firstSpan(5400), "90 minutes"}, {per(3600), "an hour"}, {per(86400), "a day"}, {per(1), "a second"},
		{per(120), "every two minutes"}, {bytesSize(1 << 20), "1 MB"}, {bytesSize(1536), "1,536 bytes"}, {bytesSize(2048), "2 kB"},
		{andList([]string{"a"}), "a"}, {andList([]string{"a", "b", "c"}), "a, b and c"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
