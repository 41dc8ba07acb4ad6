package site

import (
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/site/record"
)

// TestNextChecksFollowTheLedger: each publish takes the servers' next
// checks and effective cadences from the ledger as it is now (rule P1),
// record by record: records out of the ranked list's order are found, a
// record gone or of another address plans nothing, and a damaged ledger is
// named in Stats.Bad while the files keep what they said.
func TestNextChecksFollowTheLedger(t *testing.T) {
	golfNext := fixNow.Add(2 * time.Minute)
	for _, tc := range []struct {
		name     string
		change   func(l *spool.Ledger) // golf's record is the last
		damage   bool                  // a byte of the file written is flipped
		golfPlan bool                  // golf's next check is from the plan
		golfNext time.Time             // and is this
	}{
		{"moved_on", func(l *spool.Ledger) {
			l.Servers[len(l.Servers)-1].NextDue = fixNow.Add(9 * time.Minute).Unix()
		}, false, true, fixNow.Add(9 * time.Minute)},
		{"reordered_and_moved_on", func(l *spool.Ledger) {
			l.Servers[len(l.Servers)-1].NextDue = fixNow.Add(9 * time.Minute).Unix()
			slices.Reverse(l.Servers)
		}, false, true, fixNow.Add(9 * time.Minute)},
		{"record_gone", func(l *spool.Ledger) { l.Servers = l.Servers[:len(l.Servers)-1] }, false, false, time.Time{}},
		{"record_of_another_address", func(l *spool.Ledger) {
			l.Servers[len(l.Servers)-1].URLHash = spool.URLHash("https://golf.example.net/mcp")
		}, false, false, time.Time{}},
		{"damaged", func(l *spool.Ledger) {
			l.Servers[len(l.Servers)-1].NextDue = fixNow.Add(9 * time.Minute).Unix()
		}, true, true, golfNext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newStandard(t)
			f.MustPublish()
			l, err := spool.ReadLedger(f.dir)
			if err != nil || l.Servers[len(l.Servers)-1].ID != srvNew.ID {
				t.Fatalf("the fixture's ledger: %v", err)
			}
			f.now = fixNow.Add(time.Minute)
			tc.change(l)
			if err := spool.WriteLedger(f.dir, l); err != nil {
				t.Fatal(err)
			}
			if tc.damage {
				path := data.Dir(f.dir).LedgerDelta() // the file a plan of the same servers writes
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)/2] ^= 0x41
				f.writeFile(path, b)
			}
			st := f.MustPublish()
			if bad := slices.ContainsFunc(st.Bad, func(err error) bool { return errors.Is(err, spool.ErrLedgerCorrupt) }); bad != tc.damage {
				t.Errorf("ledger named in Stats.Bad: %v (%v), want %v", bad, st.Bad, tc.damage)
			}
			g := readServerFile(t, f, srvNew.ID)
			if fromPlan := record.ValueOf(g.NextCheckFrom) == "plan"; fromPlan != tc.golfPlan || fromPlan && !g.NextCheck.Equal(tc.golfNext) {
				t.Errorf("golf's next check %v from %q; want from the plan %v, at %v", g.NextCheck, record.ValueOf(g.NextCheckFrom), tc.golfPlan, tc.golfNext)
			}
			if a := readServerFile(t, f, srvWorking.ID); a.EffectiveCad != 7200 || record.ValueOf(a.NextCheckFrom) != "plan" {
				t.Errorf("alpha's effective cadence %d, next check from %q; want the ledger's 7200, from the plan", a.EffectiveCad, record.ValueOf(a.NextCheckFrom))
			}
		})
	}
}
