package site

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// serverSet is every file of a server's set, relative to the top of the
// site: its file, page, strip, feed and four badges.
func serverSet(id string) []string {
	return []string{"servers/" + id + ".json", "servers/" + id + ".html", strip.Dir + "/" + id + ".svg", "feeds/" + id + ".atom",
		"badges/" + id + ".json", "badges-uptime/" + id + ".json", "badges-latency/" + id + ".json", "badges-certificate/" + id + ".json"}
}

// setWeight returns the bytes of each file of a server's set, and their sum.
func setWeight(t *testing.T, out, id string) (map[string]int64, int64) {
	t.Helper()
	sizes := map[string]int64{}
	var sum int64
	for _, rel := range serverSet(id) {
		fi, err := os.Stat(filepath.Join(out, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		sizes[rel] = fi.Size()
		sum += fi.Size()
	}
	return sizes, sum
}

// ninetyDays publishes alpha checked every day for DailyLen days, as a
// server past the top 2,000 is: working but for a failing check a month,
// its time to answer varying.
func ninetyDays(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.writeServers([]data.Server{srvWorking})
	var rs []data.Result
	for day := record.DailyLen - 1; day >= 0; day-- {
		at := fixNow.Truncate(24*time.Hour).AddDate(0, 0, -day).Add(7*time.Hour + 17*time.Second)
		o, why := data.Working, ""
		if day%30 == 5 {
			o, why = data.Failing, "HTTP 502"
		}
		r := result(srvWorking, at, o, why)
		r.Duration = time.Duration(300+7*day) * time.Millisecond
		rs = append(rs, r)
	}
	f.results(rs...)
	f.fold()
	f.MustPublish()
	return f
}

// TestServerSetWeight holds what a server's set of files (its file, page,
// strip, feed and badges) weighs at today's content to its budget: a
// server checked once (the golden bravo) within 13 KB, and one checked
// every day for 90 days within 24 KB. docs/development.md
// ("What a site weighs") gives the figures; a set past its budget fails
// here, with what each file weighs.
func TestServerSetWeight(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		f      func(t *testing.T) *fixture
		id     string
		budget int64
	}{
		// 12.6 KB, where it was 14.3 (its page's strip an image of its
		// file, its file without its badges' snippets).
		{"checked_once", newStandard, srvKey.ID, 13 << 10},
		// 24.0 KB, where it was 35.8: its file's checks in columns (3.0
		// KB, where they were 6.7) and no badges' snippets; its page's
		// latency chart an area a phase (1.8 KB, where it was 5.8), its
		// strip an image of its file, its last 5 checks and 3 status
		// changes; its feed a line an entry. What is left past 15 KB is
		// most of all its daily series (4 KB of its 10 KB file) and what
		// its page says in words (docs/development.md).
		{"checked_daily_90_days", ninetyDays, srvWorking.ID, 24 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := c.f(t)
			f.MustPublish()
			sizes, sum := setWeight(t, f.out, c.id)
			t.Logf("%s: %d bytes: %v", c.id, sum, sizes)
			if sum > c.budget {
				t.Errorf("%s's set weighs %d bytes, past its budget of %d: %v", c.id, sum, c.budget, sizes)
			}
		})
	}
}
