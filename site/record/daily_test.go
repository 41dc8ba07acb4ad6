package record

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestDailyKeptAsPublished: a server's daily series read back from its
// published file, with the checks its older checks hold, and then given
// new checks is the series counted afresh from every check (rule P1: the
// uptime a server's file publishes, day by day): a day none of whose
// checks is new is kept as published, and a day with a new check, a late
// one for an earlier day included, is counted again. A new address counts
// every day.
func TestDailyKeptAsPublished(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(35, 90))
	outcomes := []data.Outcome{data.Working, data.Working, data.Working, data.NeedsKey, data.Failing, data.Refused, data.NotCheckable}
	const url = "https://a.example/mcp"
	result := func(at time.Time, url string) data.Result {
		r := data.Result{ID: "a/b", URL: url, Started: at, Status: outcomes[rng.IntN(len(outcomes))]}
		if r.Status.Answered() {
			d := func() *time.Duration { v := time.Duration(rng.IntN(900)) * time.Millisecond; return &v }
			r.HTTPStatus, r.Duration = 200, time.Duration(rng.IntN(4000))*time.Millisecond
			r.Timings = &data.Timings{DNS: d(), Connect: d(), TLS: d(), FirstByte: []time.Duration{*d()}}
		}
		return r
	}
	published := time.Date(2026, 11, 20, 13, 7, 0, 0, time.UTC)
	for n := range 40 {
		srv := data.Server{ID: "a/b", URL: url, Rank: 5, Added: published.AddDate(0, 0, -rng.IntN(60))}
		l := Listing{Server: srv}
		// Some 40 days of checks, an hour or so apart, rendered as the
		// last run did: its file is the summary read back, its older
		// checks those Prune kept.
		var s Summary
		s.Listed = srv
		for at := published.AddDate(0, 0, -40); !at.After(published); at = at.Add(time.Duration(30+rng.IntN(90)) * time.Minute) {
			s.Apply(result(at, url))
		}
		f, _ := ServerFileOf(l, &s, published)
		s.Prune(published)
		b, err := MarshalServerFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var back ServerFile
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		// What the next render applies: nothing, the next checks, a late
		// check for a day days before the last, or one at a new address.
		now := published.Add(time.Duration(rng.IntN(72*60)) * time.Minute)
		var news []data.Result
		kind := n % 4
		switch kind {
		case 1:
			for at := published.Add(time.Minute); at.Before(now); at = at.Add(time.Hour) {
				news = append(news, result(at, url))
			}
		case 2:
			late := result(published.Add(-time.Duration(1+rng.IntN(20*24))*time.Hour+17*time.Second), url)
			late.Status = data.Failing // counted: its day must change
			news = append(news, late)
		case 3:
			l.Server.URL = "https://b.example/mcp"
			news = append(news, result(published.Add(time.Minute), l.Server.URL))
		}
		render := func(keep bool) ServerFile {
			r := SummaryOf(back)
			r.Checks = MergeChecks(slices.Clone(s.Checks), r.Checks)
			r.Complete = now.Add(-MonthWindow).UnixMilli()
			if keep {
				r.KeepPublishedDays()
			}
			r.Listed = l.Server
			for _, res := range news {
				r.Apply(res)
			}
			out, _ := ServerFileOf(l, r, now)
			return out
		}
		got, want := render(true), render(false)
		if !reflect.DeepEqual(got.Daily, want.Daily) {
			for i := range got.Daily {
				if !reflect.DeepEqual(got.Daily[i], want.Daily[i]) {
					t.Fatalf("case %d (kind %d), day %s: kept %+v, counted afresh %+v", n, kind, got.Daily[i].Date, got.Daily[i], want.Daily[i])
				}
			}
			t.Fatalf("case %d (kind %d): series differ", n, kind)
		}
		if kind == 2 {
			date := news[0].Started.Format(time.DateOnly)
			at := func(ds []Day) Day {
				i := slices.IndexFunc(ds, func(d Day) bool { return d.Date == date })
				if i < 0 {
					t.Fatalf("case %d: no day %s in the series", n, date)
				}
				return ds[i]
			}
			if was, is := at(back.Daily), at(got.Daily); is.Counted != was.Counted+1 {
				t.Fatalf("case %d: the day of a late check, %s, counts %d checks, published %d", n, date, is.Counted, was.Counted)
			}
		}
	}
}
