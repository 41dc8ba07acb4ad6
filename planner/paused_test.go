package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/data/spool"
)

// mustPausedList parses text as a paused list.
func mustPausedList(t testing.TB, text string) lists.PausedList {
	t.Helper()
	l, bad, err := lists.ParsePausedList("paused.txt", strings.NewReader(text))
	if err != nil || len(bad) > 0 {
		t.Fatalf("paused list: %v %v", err, bad)
	}
	return l
}

// pausedSpellings write an address of host %[1]s and path %[2]s as a
// listing or a pause request may: the same endpoint each time.
var pausedSpellings = []string{
	"https://%[1]s/%[2]s",
	"https://%[1]s/%[2]s/",
	"HTTPS://%[3]s/%[2]s",
	"https://%[3]s:443/%[2]s/",
	"https://%[1]s./%[2]s",
	"https://%[1]s/%[2]s#part",
	"https://user@%[1]s/%[2]s",
}

// TestPausedNamesAsMatch (rules R1, S8): the planner, matching the paused
// list server by server by the hashes of its pass over the addresses,
// pauses exactly the servers lists.PausedList.Match pauses (by id, by any
// spelling of an address, and every server at the address of one named,
// groups of more than spool.MaxShared at one address included), and
// reports the same entries as naming no listed server.
func TestPausedNamesAsMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	spell := func(host, path string) string {
		f := pausedSpellings[r.IntN(len(pausedSpellings))]
		return fmt.Sprintf(f, host, path, strings.ToUpper(host))
	}
	var servers []data.Server
	for i := range 20_000 {
		host, path := fmt.Sprintf("h%d.example", r.IntN(3000)), fmt.Sprintf("mcp%d", r.IntN(3))
		if i%150 == 0 {
			host, path = "crowded.example", "mcp" // 134 servers: groups of MaxShared
		}
		u := spell(host, path)
		if i%97 == 0 {
			u = "" // listed without an address
		}
		servers = append(servers, data.Server{ID: fmt.Sprintf("s%05d", i), Rank: i + 1, URL: u})
	}
	pick := func() data.Server { return servers[r.IntN(len(servers))] }
	var lines []string
	for range 40 {
		s := pick()
		lines = append(lines, s.ID)
		if s.URL != "" {
			host, path, _ := strings.Cut(strings.TrimPrefix(strings.ToLower(data.AddressKey(s.URL)), "https://"), "/")
			lines = append(lines, spell(host, strings.TrimSuffix(path, "/")))
		}
	}
	lines = append(lines,
		"s00001", "s00001", // twice: both name it
		"crowded.example",                  // an id no server has
		"https://crowded.example/mcp/x",    // no server's address
		"HTTPS://Crowded.Example:443/mcp/", // every group at the address
		"https://h1.example:8443/mcp0",     // another port: another address
	)
	r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	for _, c := range []struct {
		name  string
		lines []string
	}{
		{"ids_and_addresses", lines},
		{"ids_only", slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.Contains(l, "://") })},
		{"addresses_only", slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return !strings.Contains(l, "://") })},
		{"none", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := mustPausedList(t, strings.Join(c.lines, "\n")+"\n")
			want, wantUnmatched := list.Match(servers)
			if c.name == "ids_and_addresses" && (len(want) < 100 || len(wantUnmatched) < 3) {
				t.Fatalf("%d paused, %d unmatched: the fixture pauses too little", len(want), len(wantUnmatched))
			}
			p := pass{in: Input{Servers: servers, Paused: list}, l: spool.NewLedger()}
			p.hashAddresses()
			p.sh = shareAddresses(servers, p.addrs)
			for i, s := range servers {
				if got := p.sh.isPaused(i); got != want[s.ID] {
					t.Errorf("server %s at %q: paused %v, lists.Match says %v", s.ID, s.URL, got, want[s.ID])
				}
			}
			var got []lists.PausedEntry
			if p.paused != nil {
				got = p.paused.unmatched()
			}
			if !slices.Equal(got, wantUnmatched) {
				t.Errorf("unmatched %v; lists.Match says %v", got, wantUnmatched)
			}
		})
	}
}
