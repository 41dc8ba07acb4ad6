package lists

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plug.directory/prober/data"
)

// tenThousand returns a ranked list of 10,000 servers s00001...s10000.
func tenThousand() string {
	var b strings.Builder
	b.WriteString("id,rank,url,added\n")
	for i := 1; i <= 10_000; i++ {
		fmt.Fprintf(&b, "s%05d,%d,https://h%d.example.net/mcp,2026-01-01T00:00:00Z\n", i, i, i%300)
	}
	return b.String()
}

// TestListGuard: a ranked list broken by a quote or cut in half does not
// drop its servers from the plans. One unbalanced quote
// at line 5,002 costs that row alone, named with its text; a list that
// loses more than 5% of the last good one's servers, or cannot be read, is
// refused and the last good list stands until -accept-shrink takes it.
func TestListGuard(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "servers.csv")
	good := tenThousand()
	lines := strings.SplitAfter(good, "\n")
	type want struct {
		servers int
		bad     string // first bad row, "" for none
		stale   string // prefix of stale, "" for none
		err     bool
		copy    int // servers in the copy after
	}
	step := func(name, text string, g ListGuard, w want) {
		t.Helper()
		if text == "" {
			os.Remove(path)
		} else if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		g.Dir = dir
		servers, bad, stale, err := g.Read(path)
		firstBad, staleMsg := "", ""
		if len(bad) > 0 {
			firstBad = bad[0].Error()
		}
		if stale != nil {
			staleMsg = stale.Error()
		}
		copied, _, _ := ReadServers(data.Dir(dir).ServersCopy())
		if len(servers) != w.servers || firstBad != w.bad || !strings.HasPrefix(staleMsg, w.stale) || (w.stale == "") != (stale == nil) ||
			(err != nil) != w.err || len(copied) != w.copy {
			t.Errorf("%s: %d servers, bad %q, stale %q, err %v, copy %d;\n want %d, %q, %q..., err %v, copy %d",
				name, len(servers), firstBad, staleMsg, err, len(copied), w.servers, w.bad, w.stale, w.err, w.copy)
		}
	}
	step("no list and no copy", "", ListGuard{}, want{err: true})
	step("the first list", good, ListGuard{}, want{servers: 10_000, copy: 10_000})
	step("the same list again", good, ListGuard{}, want{servers: 10_000, copy: 10_000})

	quote := strings.Join(lines[:5001], "") + `s05001,5001,"https://h1.example.net/mcp,2026-01-01T00:00:00Z` + "\n" + strings.Join(lines[5002:], "")
	step("one unbalanced quote at line 5002", quote, ListGuard{}, want{servers: 9_999, copy: 9_999,
		bad: path + `:5002: bad quoting (extraneous or missing " in quoted-field) in row "s05001,5001,\"https://h1.example.net/mcp,2026-01-01T00:00:00Z"`})
	step("the list fixed", good, ListGuard{}, want{servers: 10_000, copy: 10_000})

	half := good[:len(good)/2]
	step("the list cut in half", half, ListGuard{}, want{servers: 10_000, copy: 10_000,
		bad:   path + `:5010: server "s05009": added "2026-01" is not an RFC 3339 time`,
		stale: ErrListShrank.Error() + ": " + path + " lists 5008 servers, 4992 of the 10000 of the last good list are gone (49.9%, more than 5%): the last good list " + data.Dir(dir).ServersCopy() + " stands (plan -accept-shrink takes the new one)"})
	step("publish reads it too", half, ListGuard{ReadOnly: true}, want{servers: 10_000, copy: 10_000,
		bad: path + `:5010: server "s05009": added "2026-01" is not an RFC 3339 time`, stale: ErrListShrank.Error()})
	step("the list missing", "", ListGuard{}, want{servers: 10_000, copy: 10_000, stale: "read ranked list: open "})
	step("an empty list", "\n", ListGuard{}, want{servers: 10_000, copy: 10_000, stale: "read ranked list " + path + ": " + ErrEmptyList.Error()})

	small := strings.Join(lines[:9_501], "") // 9,500 servers: 5% gone, not more
	step("5% gone", small, ListGuard{}, want{servers: 9_500, copy: 9_500})
	step("a half accepted", strings.Join(lines[:4_751], ""), ListGuard{Accept: true}, want{servers: 4_750, copy: 4_750})
	step("read unguarded", good, ListGuard{}, want{servers: 10_000, copy: 10_000})
	if _, _, _, err := (ListGuard{}).Read(path); err != nil {
		t.Errorf("unguarded read: %v", err)
	}
}

// TestListGuardRefusalIsNamed: the refusal wraps ErrListShrank.
func TestListGuardRefusalIsNamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.csv")
	os.WriteFile(path, []byte(tenThousand()), 0o644)
	ListGuard{Dir: dir}.Read(path)
	os.WriteFile(path, []byte("id,rank,url,added\na,1,,2026-01-01T00:00:00Z\n"), 0o644)
	if _, _, stale, _ := (ListGuard{Dir: dir}).Read(path); !errors.Is(stale, ErrListShrank) {
		t.Errorf("stale = %v, want ErrListShrank", stale)
	}
}

// BenchmarkReadServersGuarded reads a ranked list of a million rows as plan
// does each minute, held to its last good copy (unchanged: known by its
// checksum), against ReadServers of the same file.
func BenchmarkReadServersGuarded(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "servers.csv")
	var sb strings.Builder
	sb.WriteString("id,rank,url,added\n")
	for i := range 1_000_000 {
		fmt.Fprintf(&sb, "srv-%07d,%d,https://host-%d.example.net/mcp/%d,2026-01-01T00:00:00Z\n", i, i+1, i%100_000, i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("unguarded", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := ReadServers(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	g := ListGuard{Dir: dir}
	if _, _, _, err := g.Read(path); err != nil {
		b.Fatal(err)
	}
	b.Run("guarded", func(b *testing.B) {
		for b.Loop() {
			if _, _, stale, err := g.Read(path); err != nil || stale != nil {
				b.Fatal(err, stale)
			}
		}
	})
}
