package record

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// goldenServerFiles returns the server files of the site's golden output
// (its publish test writes them), and those of the layout of a build
// before (history and daily series as lists of objects), by name.
func goldenServerFiles(t testing.TB) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, glob := range []string{"../testdata/golden/servers/*.json", "../testdata/upgrade/*/*.json"} {
		paths, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files[p] = b
		}
	}
	if len(files) < 7 {
		t.Fatalf("%d server files found", len(files))
	}
	return files
}

// TestServerFileWrittenAsEncodingJSON: a server's file written with its
// columns by hand is the bytes json.Marshal writes of it, whatever its
// strings hold and its columns are (full, empty, nil).
func TestServerFileWrittenAsEncodingJSON(t *testing.T) {
	var fs []ServerFile
	for name, b := range goldenServerFiles(t) {
		var f ServerFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fs = append(fs, f)
	}
	h, d := benchColumns()
	odd := "<b>&\"quoted\"\\ \n\t\u2028 é \x7f \xff"
	full := fs[0]
	full.ID, full.Label, full.History, full.Daily = odd, odd, h, d
	full.History[0].Detail = odd
	var all ServerFile // every field of every type it holds set (TestServerFileRestByHand)
	fillAll(reflect.ValueOf(&all).Elem(), new(int))
	all.History, all.Daily = h, d
	percent := func(v float64) ServerFile {
		f := fs[0]
		f.Uptime.Week.Percent = &v
		return f
	}
	fs = append(fs, full, all, ServerFile{}, ServerFile{ID: "x", History: History{}, Daily: DailySeries{}},
		percent(1e-7), percent(math.Copysign(0, -1)), percent(2.5e21), percent(math.NaN()), percent(math.Inf(-1)))
	for i, f := range fs {
		want, werr := json.Marshal(f)
		got, err := MarshalServerFile(f)
		switch {
		case werr != nil:
			if err == nil || !strings.HasSuffix(err.Error(), werr.Error()) {
				t.Errorf("file %d (%s) written with the error %v, encoding/json's %v", i, f.ID, err, werr)
			}
		case err != nil || !bytes.Equal(got, want):
			t.Errorf("file %d (%s) written as\n%s\n%v\nencoding/json writes\n%s", i, f.ID, got, err, want)
		}
	}
}

// TestServerFileReadAsEncodingJSON: a server's file is read as
// json.Unmarshal reads it, value or error, its columns cut from it in the
// form it is written in (indented or not, and the lists of the layout
// before). Every file with a byte changed, removed or a space added is
// tried: each is read the same as by encoding/json.
func TestServerFileReadAsEncodingJSON(t *testing.T) {
	files := goldenServerFiles(t)
	for name, b := range files {
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "\t"); err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{b, ind.Bytes()} {
			if !readServerBoth(t, in) {
				t.Errorf("%s: the columns are not cut from the form they are written in", name)
			}
		}
	}
	taken, tried := 0, 0
	b := files[filepath.Join("..", "testdata", "golden", "servers", "delta.json")] // a reason, a check and a day counted
	for i := range b {
		for _, v := range oneByteChanged(b, i, "0\"\\,]}") {
			if readServerBoth(t, v) {
				taken++
			}
			tried++
		}
	}
	t.Logf("columns cut from %d of %d files with a byte changed", taken, tried)
	if taken < tried/4 {
		t.Errorf("columns cut from %d of %d files with a byte changed: not even from those changed in a reason or a number", taken, tried)
	}
}

// TestServerFileReadKeys: keys encoding/json could read as a column's
// (another case, an escape, a letter that folds to its own, twice) leave
// the whole file to it, as does a file without a column; keys in a
// member's value are its value's.
func TestServerFileReadKeys(t *testing.T) {
	b := string(goldenServerFiles(t)[filepath.Join("..", "testdata", "golden", "servers", "delta.json")])
	first := func(member string) string { return "{" + member + "," + b[1:] } // a member before the others
	end := strings.LastIndexByte(b, '}')
	last := func(member string) string { return b[:end] + "," + member + b[end:] } // and after them
	hist := `"history":{"started":[],"status":[],"reason":[],"latency_ms":[],"timings":{"dns_ms":[],"connect_ms":[],"tls_ms":[],"wait_ms":[]}}`
	for _, c := range []struct {
		name, in string
		cut      bool
	}{
		{"as_written", b, true},
		{"unknown_keys", first(`"extra":{"history":[1],"Daily":"x"}`), true},
		{"other_case", first(`"History":[]`), false},
		{"other_case_after", last(`"DAILY":null`), false},
		{"escaped", first(`"hist\u006fry":[]`), false},
		{"folded_letter", last(`"hi\u017ftory":[]`), false},
		{"folded_letter_raw", last(`"hi` + "\u017f" + `tory":[]`), false},
		{"twice", last(hist), false},
		{"without_daily", strings.Replace(b, `"daily"`, `"dai1y"`, 1), false},
		{"other_key_escaped", strings.Replace(b, `"id"`, `"\u0069d"`, 1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if cut := readServerBoth(t, []byte(c.in)); cut != c.cut {
				t.Errorf("columns cut: %v, want %v", cut, c.cut)
			}
		})
	}
}

// FuzzServerFileRead: any text is read as json.Unmarshal reads it into a
// ServerFile.
func FuzzServerFileRead(f *testing.F) {
	for _, b := range goldenServerFiles(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"history":[],"daily":[]}`))
	f.Add([]byte(` { } `))
	f.Fuzz(func(t *testing.T, b []byte) { readServerBoth(t, b) })
}

// readServerBoth reads b with ReadServerFile and with json.Unmarshal, and
// fails t unless both read the same value or fail with the same error. It
// returns whether ReadServerFile cut the columns from b.
func readServerBoth(t *testing.T, b []byte) bool {
	t.Helper()
	got, err := ReadServerFile(b)
	var want ServerFile
	werr := json.Unmarshal(b, &want)
	switch {
	case (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error():
		t.Errorf("read with the error %v, encoding/json's %v, from %q", err, werr, b)
	case err == nil && !reflect.DeepEqual(got, want):
		t.Errorf("read as\n%+v\nencoding/json reads\n%+v\nfrom %q", got, want, b)
	}
	_, cut := readServerFileByMembers(b)
	return cut
}
