package lists

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"plug.directory/prober/data"
)

func TestReadServersValid(t *testing.T) {
	got, bad, err := ReadServers(filepath.Join("testdata", "servers", "valid.csv"))
	if err != nil || len(bad) != 0 {
		t.Fatalf("ReadServers: err %v, bad %v", err, bad)
	}
	want := []data.Server{
		{ID: "alpha", Rank: 1, URL: "", Added: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "beta", Rank: 2, URL: "https://B.example.com/mcp", Added: time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC)},
		{ID: "zeta", Rank: 2, URL: "https://z.example.com:8443/mcp", Added: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("servers:\n got %+v\nwant %+v", got, want)
	}
	if h := got[1].Host(); h != "b.example.com" {
		t.Errorf("host of %s = %q, want b.example.com", got[1].URL, h)
	}
}

// TestReadServersInvalid reads each testdata/servers/invalid-* file: a bad
// row is reported with file:line and left out, the rest is kept; a list with
// no usable row or without a needed column is an error.
func TestReadServersInvalid(t *testing.T) {
	dir := filepath.Join("testdata", "servers")
	cases := []struct {
		file    string
		bad     []string // exact messages, file name relative to dir
		keptIDs []string
		err     string // exact error, "" for none
	}{
		{file: "invalid-missing-id.csv", bad: []string{"invalid-missing-id.csv:3: missing id"}, keptIDs: []string{"alpha", "beta"}},
		{file: "invalid-duplicate-id.csv", bad: []string{`invalid-duplicate-id.csv:4: duplicate id "alpha" (first on line 2, kept)`}, keptIDs: []string{"alpha", "beta"}},
		{file: "invalid-unbalanced-quote.csv", bad: []string{
			`invalid-unbalanced-quote.csv:3: bad quoting (extraneous or missing " in quoted-field) in row "s2,2,\"https://b.example/mcp,2026-01-01T00:00:00Z"`,
			`invalid-unbalanced-quote.csv:5: bad quoting (bare " in non-quoted-field) in row "s4,4,https://d.example/m\"cp,2026-01-01T00:00:00Z"`,
		}, keptIDs: []string{"s1", "s3", "s5"}},
		{file: "invalid-bad-rank.csv", bad: []string{
			`invalid-bad-rank.csv:3: server "beta": rank "zero" is not a positive integer`,
			`invalid-bad-rank.csv:4: server "gamma": rank "0" is not a positive integer`,
		}, keptIDs: []string{"alpha"}},
		{file: "invalid-bad-url.csv", bad: []string{
			`invalid-bad-url.csv:3: server "beta": url "a.example.com/mcp" is not an absolute address with a host: listed as not checkable (address does not parse)`,
			`invalid-bad-url.csv:4: server "gamma": url "https://%zz/" is not an absolute address with a host: listed as not checkable (address does not parse)`,
		}, keptIDs: []string{"alpha", "beta", "gamma"}},
		{file: "invalid-bad-time.csv", bad: []string{`invalid-bad-time.csv:3: server "beta": added "yesterday" is not an RFC 3339 time`}, keptIDs: []string{"alpha"}},
		{file: "invalid-short-row.csv", bad: []string{"invalid-short-row.csv:2: 3 columns, want at least 4"}, keptIDs: []string{"beta"}},
		// Ids whose files would collide with another server's or pass a
		// file name's limit: each costs its own row.
		{file: "invalid-ids.csv", bad: []string{
			`invalid-ids.csv:3: id "a.json/b" cannot name the site's files: part "a.json" ends in ".json", as the site's files do`,
			`invalid-ids.csv:4: id "x.html/y" cannot name the site's files: part "x.html" ends in ".html", as the site's files do`,
			`invalid-ids.csv:6: id "` + strings.Repeat("s", 60) + `" cannot name the site's files: part "ssssssssssssssssssss"... of 245 bytes, over the 200 a file name leaves`,
			`invalid-ids.csv:8: id "alpha" is "Alpha" of line 7 (kept) in another case: one file where case is ignored, as on macOS`,
			`invalid-ids.csv:9: id "feeds/Z.ATOM" cannot name the site's files: part "Z.ATOM" ends in ".atom", as the site's files do`,
			`invalid-ids.csv:10: id "s.tmp-1" cannot name the site's files: part "s.tmp-1" has ".tmp-" in it, as the site's temporary files do`,
			`invalid-ids.csv:11: id "a:b" cannot name the site's files: part "a:b" has ':' in it: only letters, digits and . _ - @ + are allowed`,
			`invalid-ids.csv:12: id "../up" cannot name the site's files: part ".." is empty or starts with a dot`,
			`invalid-ids.csv:16: id "b.older" cannot name the site's files: part "b.older" ends in ".older", as the site's files do`,
			`invalid-ids.csv:17: id "c.bin/d" cannot name the site's files: part "c.bin" ends in ".bin", as the site's files do`,
		}, keptIDs: []string{"a", "x", "Alpha", "a/b", "A/c", "v1.2/svg"}},
		{file: "invalid-empty.csv", err: "read ranked list invalid-empty.csv: no server in the ranked list"},
		{file: "invalid-no-url-column.csv", err: `read ranked list invalid-no-url-column.csv:1: no "url" column in header`},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".csv"), func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			got, bad, err := ReadServers(path)
			var msgs []string
			for _, b := range bad {
				msgs = append(msgs, strings.TrimPrefix(b.Error(), dir+string(filepath.Separator)))
			}
			gotErr := ""
			if err != nil {
				gotErr = strings.Replace(err.Error(), dir+string(filepath.Separator), "", 1)
			}
			if gotErr != c.err {
				t.Errorf("err = %q, want %q", gotErr, c.err)
			}
			if !reflect.DeepEqual(msgs, c.bad) {
				t.Errorf("bad rows:\n got %q\nwant %q", msgs, c.bad)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if !reflect.DeepEqual(ids, c.keptIDs) {
				t.Errorf("kept %q, want %q", ids, c.keptIDs)
			}
			if c.err != "" && !errors.Is(err, ErrEmptyList) && got != nil {
				t.Errorf("servers returned with error: %v", got)
			}
		})
	}
}

// TestParseServersNotCheckable: a row whose address cannot be checked
// stays listed, with the reason table O shows for it, and is named
// file:line; a row without an address is not checkable from the start; an
// id too long for a plan line is set aside.
func TestParseServersNotCheckable(t *testing.T) {
	long := "https://a.example/" + strings.Repeat("a", 200_000)
	list := "id,rank,url,added\n" +
		"good,1,https://a.example/mcp,2026-01-01T00:00:00Z\n" +
		"local,2,,2026-01-01T00:00:00Z\n" +
		"long,3," + long + ",2026-01-01T00:00:00Z\n" +
		"bad,4,https://%zz/,2026-01-01T00:00:00Z\n" +
		strings.Repeat("x", data.MaxIDBytes+1) + ",5,https://a.example/x,2026-01-01T00:00:00Z\n" +
		"edge,6,https://a.example/" + strings.Repeat("e", data.MaxAddressBytes-len("https://a.example/")) + ",2026-01-01T00:00:00Z\n"
	servers, bad, err := ParseServers("servers.csv", []byte(list))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range servers {
		got[s.ID] = s.NotCheckable()
		if s.BadAddress != "" && s.URL != "" {
			t.Errorf("%s: bad address kept as URL %.40q", s.ID, s.URL)
		}
	}
	want := map[string]string{"good": "", "local": data.DetailNoAddress, "long": data.DetailAddressTooLong, "bad": data.DetailAddressUnparsable, "edge": ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("not checkable = %v, want %v", got, want)
	}
	var msgs []string
	for _, b := range bad {
		msgs = append(msgs, b.Error())
	}
	wantMsgs := []string{
		`servers.csv:4: server "long": url "https://a.example/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"... of 200018 bytes, over the 2048 checked: listed as not checkable (address is too long)`,
		`servers.csv:5: server "bad": url "https://%zz/" is not an absolute address with a host: listed as not checkable (address does not parse)`,
		`servers.csv:6: id "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"... of 257 bytes, over the 256 an id may take`,
	}
	if !reflect.DeepEqual(msgs, wantMsgs) {
		t.Errorf("bad rows:\n got %q\nwant %q", msgs, wantMsgs)
	}
	// The server listed without an address is counted
	// too, as the site shows it.
	sum := SummarizeRows("servers.csv", servers, bad)
	if want := "ranked list servers.csv: 5 servers listed; 1 rows set aside (1 bad id); 3 listed as not checkable (1 address does not parse, 1 address is too long, 1 no address)"; sum != want {
		t.Errorf("summary %q\n want %q", sum, want)
	}
	if s := SummarizeRows("servers.csv", []data.Server{{ID: "a", URL: "https://a.example/mcp"}}, nil); s != "" {
		t.Errorf("summary of a clean list: %q", s)
	}
}

// TestParseServersHeader: a byte-order mark and quotes around the column
// names do not hide a column.
func TestParseServersHeader(t *testing.T) {
	for _, head := range []string{"id,rank,url,added", "\ufeffid,rank,url,added", "\ufeff\"id\",\"rank\",\"url\",\"added\"", "ID, Rank ,url,added,notes"} {
		servers, bad, err := ParseServers("l.csv", []byte(head+"\na,1,https://a.example/mcp,2026-01-01T00:00:00Z,x\n"))
		if err != nil || len(bad) > 0 || len(servers) != 1 || servers[0].ID != "a" {
			t.Errorf("header %q: %v %v %v", head, servers, bad, err)
		}
	}
}

func TestReadServersUnreadable(t *testing.T) {
	_, _, err := ReadServers(filepath.Join(t.TempDir(), "missing.csv"))
	if err == nil || !strings.HasPrefix(err.Error(), "read ranked list: open ") {
		t.Fatalf("err = %v, want read ranked list: open ...", err)
	}
}

func TestWriteServersRoundTrip(t *testing.T) {
	in := []data.Server{
		{ID: "a", Rank: 1, URL: "https://x.example.com/mcp?x=1,2", Added: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)},
		{ID: "b", Rank: 9, Added: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)},
	}
	var buf bytes.Buffer
	if err := WriteServers(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, bad, err := ParseServers("round", buf.Bytes())
	if err != nil || len(bad) > 0 {
		t.Fatalf("ParseServers: %v %v", err, bad)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

// TestFastHostOf holds FastHostOf to HostOf on addresses of every shape.
func TestFastHostOf(t *testing.T) {
	addrs := []string{
		"https://a.example.com/mcp", "https://A.Example.COM:8443/x?y#z", "https://a.example.com.", "https://a.example.com:/",
		"https://user:pw@a.example.com/", "https://[::1]:443/", "https://a.example.com:44x3/", "https://a b.example.com/",
		"https://a.example.com/p%zz", "https://%zz/", "http://a.example.com", "HTTPS://a.example.com", "a.example.com/mcp",
		"https:///path", "https://a.example.com?x=1", "https://a.example.com#f", "mailto:x@example.com", "https://é.example.com/",
		"https://a_b.example.com/", "1https://a.example.com/", "https://a.example.com\t/", "",
	}
	for _, a := range addrs {
		if got, want := data.FastHostOf(a), data.HostOf(a); got != want {
			t.Errorf("FastHostOf(%q) = %q, HostOf = %q", a, got, want)
		}
	}
	f := func(scheme, host, rest string) bool {
		a := scheme + "://" + host + rest
		return data.FastHostOf(a) == data.HostOf(a)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

// TestParseServersQuoted holds the reader of quoted rows to the one of
// plain rows on the same list, bad rows included: quoting every field
// changes nothing read.
func TestParseServersQuoted(t *testing.T) {
	var plain, quoted strings.Builder
	plain.WriteString("added,id,url,rank\n")
	quoted.WriteString(`"added","id","url","rank"` + "\n")
	rows := 300000
	if testing.Short() {
		rows = 30000 // still many chunks of the parallel reader
	}
	for i := range rows {
		var f []string
		switch i % 1000 {
		case 7:
			f = []string{"2026-01-01T00:00:00Z", fmt.Sprintf("s%d", i), fmt.Sprintf("https://h%d.example.net/x", i%97), "zero"}
		case 8:
			f = []string{"2026-01-01T00:00:00Z", fmt.Sprintf("s%d", i-2), fmt.Sprintf("https://h%d.example.net/x", i%97), fmt.Sprint(i)}
		default:
			f = []string{fmt.Sprintf("2026-01-0%dT00:00:00Z", 1+i%9), fmt.Sprintf("s%d", i), fmt.Sprintf("https://H%d.example.net:8443/x", i%97), fmt.Sprint(1 + (i*7919)%5000)}
		}
		plain.WriteString(strings.Join(f, ",") + "\n")
		quoted.WriteString(`"` + strings.Join(f, `","`) + `"` + "\n")
	}
	fast, fastBad, err := ParseServers("l.csv", []byte(plain.String()))
	if err != nil {
		t.Fatal(err)
	}
	slow, slowBad, err := ParseServers("l.csv", []byte(quoted.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Error("plain and quoted rows read differently")
	}
	if fmt.Sprint(fastBad) != fmt.Sprint(slowBad) || len(fastBad) != rows/500 {
		t.Errorf("bad rows: plain %d, quoted %d (want %d); first %v / %v", len(fastBad), len(slowBad), rows/500, fastBad[:2], slowBad[:2])
	}
}

// BenchmarkParseServers reads a ranked list of a million rows without
// quotes (the fast path), as cmd/plan does every minute.
func BenchmarkParseServers(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("id,rank,url,added\n")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1_000_000 {
		fmt.Fprintf(&buf, "srv-%07d,%d,https://host-%d.example.net/mcp/%d,%s\n", i, i+1, i%100_000, i, base.Add(time.Duration(i)*time.Second).Format(time.RFC3339))
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, _, err := ParseServers("bench.csv", buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
