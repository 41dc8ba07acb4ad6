package site

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
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

// TestLedgerReadByDelta: while the ledger's base stays and its records are
// in the rank order of the site's rows, a publish reads only the ledger's
// delta, and every server's next check and effective cadence are still
// what the whole ledger says: over 40 minutes of plans that move next
// checks on, take them back to the base's, stretch cadences, move a
// record to another address and back, and write new bases (two servers
// swapped, then swapped back), compared after each publish with the whole
// ledger. A base out of step with the rows is read whole until the next.
func TestLedgerReadByDelta(t *testing.T) {
	f := newFixture(t)
	servers := benchList(t, f, 120)
	l := benchLedger(servers)
	base := slices.Clone(l.Servers) // the records of the base on disk
	var logs bytes.Buffer
	cfg := f.config()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rng := rand.New(rand.NewPCG(3, 4))
	var whole []int
	for minute := range 40 {
		f.now = fixNow.Add(time.Duration(minute) * time.Minute)
		switch minute {
		case 0:
		case 15, 25: // a new base: two servers swapped (out of step), then back
			l.Servers[1], l.Servers[2] = l.Servers[2], l.Servers[1]
		default:
			if minute > 15 && minute < 25 {
				l.Servers[1].NextDue += 60 // out of step: its record names another row
			}
			for range 6 {
				j := rng.IntN(len(l.Servers))
				s := &l.Servers[j]
				switch rng.IntN(5) {
				case 0:
					*s = base[j] // back to what the base says
				case 1, 2:
					s.NextDue += int64(60 + rng.IntN(3600))
				case 3:
					s.Cadence *= 2
				case 4:
					if s.URLHash == base[j].URLHash {
						s.URLHash = spool.URLHash("https://elsewhere.example.org/mcp/" + s.ID)
					} else {
						s.URLHash = base[j].URLHash
					}
				}
			}
		}
		if err := spool.WriteLedger(f.dir, l); err != nil {
			t.Fatal(err)
		}
		if minute == 15 || minute == 25 {
			base = slices.Clone(l.Servers)
		}
		logs.Reset()
		if _, err := Publish(context.Background(), cfg); err != nil {
			t.Fatalf("minute %d: %v", minute, err)
		}
		if !strings.Contains(logs.String(), "read the ledger's changes since its base") {
			whole = append(whole, minute)
		}
		truth := map[string]spool.LedgerServer{}
		if _, err := spool.EachLedgerServer(f.dir, func(s *spool.LedgerServer) { truth[s.ID] = *s }); err != nil {
			t.Fatal(err)
		}
		st, err := loadStore(f.dir, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range st.all() {
			id := st.id(&st.all()[i])
			var next, eff int64
			if s, ok := truth[id]; ok && s.URLHash == r.URLSum {
				next = s.NextDue * 1000
				if c := s.EffectiveCadence(); c > data.Tier(r.Rank) {
					eff = int64(c / time.Second)
				}
			}
			if r.PlanNext != next || r.EffCad != eff {
				t.Fatalf("minute %d: %s's next check %d, effective cadence %d; the ledger says %d, %d", minute, id, r.PlanNext, r.EffCad, next, eff)
			}
			if next > f.now.UnixMilli() { // a plan in the past is not published as one
				if g := readServerFile(t, f, id); record.ValueOf(g.NextCheckFrom) != "plan" || g.NextCheck.UnixMilli() != next {
					t.Fatalf("minute %d: %s's file says its next check is %v from %q; the ledger says %v", minute, id, g.NextCheck, record.ValueOf(g.NextCheckFrom), time.UnixMilli(next).UTC())
				}
			}
		}
	}
	// Read whole: the first publish, the one after the base out of step
	// and those until the base in step again.
	if want := []int{0, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25}; !slices.Equal(whole, want) {
		t.Errorf("the ledger was read whole at minutes %v, want %v", whole, want)
	}
}
