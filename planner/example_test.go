package planner_test

import (
	"fmt"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// A new server, listed after the first plan, is planned in the next minute;
// two on one host are 30 s apart (rule S5). The ledger says when each is
// next due and how often it is checked.
func ExamplePlanner_Plan() {
	first := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	now := first.Add(-time.Minute)
	p := planner.Planner{Now: func() time.Time { return now }}
	l := spool.NewLedger()
	list := []data.Server{{ID: "weather", Rank: 1, URL: "https://tools.example.net/weather"}}
	if _, err := p.Plan(first, planner.Input{Servers: list}, l); err != nil {
		fmt.Println(err)
		return
	}
	list = append(list,
		data.Server{ID: "maps", Rank: 2, URL: "https://tools.example.net/maps"},
		data.Server{ID: "mail", Rank: 3000, URL: "https://tools.example.net/mail"})
	now = now.Add(time.Minute)
	rep, err := p.Plan(first.Add(time.Minute), planner.Input{Servers: list}, l)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range rep.Checks {
		fmt.Println(c.At.Format("15:04:05"), c.ID, c.Reason)
	}
	for _, id := range []string{"maps", "mail"} {
		e, _ := l.Lookup(id)
		fmt.Println(id, "every", e.EffectiveCadence())
	}
	// Output:
	// 12:01:00 maps new
	// 12:01:30 mail new
	// maps every 1h0m0s
	// mail every 24h0m0s
}
