package record

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"plug.directory/prober/data"
)

// TestServerFileRestByHand: the rest of a server's file, as encoding/json
// writes it, is read by hand (scanRest), as encoding/json reads it: the
// golden files, a file of zero values, and a file with every field of
// every type it holds set, its strings holding what encoding/json
// escapes; and so is each whole, columns and all, in one pass
// (scanWhole). A field added to those types and not to
// scanRest fails here, not by a publish that quietly reads every file
// with encoding/json again.
func TestServerFileRestByHand(t *testing.T) {
	full := ServerFile{}
	n := 0
	fillAll(reflect.ValueOf(&full).Elem(), &n)
	full.History, full.Daily = nil, nil // the columns: cut before
	files := map[string][]byte{}
	for name, b := range goldenServerFiles(t) {
		files[name] = b
	}
	for name, f := range map[string]ServerFile{"zero": {}, "full": full} {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	for name, b := range files {
		if strings.Contains(name, "upgrade") {
			continue // the layout before: its columns are lists, left to encoding/json
		}
		rest, _, _, ok := cutColumns(b)
		if !ok {
			t.Fatalf("%s: columns not cut", name)
		}
		var got, want ServerFile
		if !got.scanRest(rest) {
			t.Errorf("%s: the rest of the file is not read by hand: %s", name, rest)
			continue
		}
		if err := json.Unmarshal(rest, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read by hand as\n%+v\nencoding/json reads\n%+v", name, got, want)
		}
	}
	// A whole file, columns and all, is read in one pass.
	full.History, full.Daily = benchColumns()
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	files["full"] = b
	for name, b := range files {
		if strings.Contains(name, "upgrade") || name == "zero" {
			continue // columns of another form: null, lists
		}
		var got, want ServerFile
		if !got.scanWhole(b) {
			t.Errorf("%s: not read whole in one pass", name)
			continue
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read in one pass as\n%+v\nencoding/json reads\n%+v", name, got, want)
		}
	}
}

// TestServerFileRestOtherForms: a rest not in the form encoding/json
// writes (a member missing, unknown or twice, keys out of order, null
// where a value is written, a number or a time of another form, a
// string encoding/json would have to mend) is not read by hand, and
// ReadServerFile still reads the file as encoding/json does.
func TestServerFileRestOtherForms(t *testing.T) {
	b := string(goldenServerFiles(t)["../testdata/golden/servers/alpha.json"]) // a server checked, its every member set
	for _, c := range []struct{ name, old, new string }{
		{"unknown_member", `"tier":`, `"extra":1,"tier":`},
		{"member_twice", `"tier":`, `"rank":1,"tier":`},
		{"member_missing", `"tier":"hourly",`, ``},
		{"other_case", `"tier":`, `"Tier":`},
		{"escaped_key", `"tier":`, `"ti\u0065r":`},
		{"null_for_a_struct", `"uptime":{`, `"uptime":null,"x":{`},
		{"fraction_for_an_int", `"rank":1`, `"rank":1.0`},
		{"leading_zero", `"rank":1`, `"rank":01`},
		{"other_time_layout", `.000Z"`, `Z"`},
		{"time_offset", `.000Z"`, `.000+01:00"`},
		{"null_time", `"seen_at":"`, `"seen_at":null,"x":"`},
		{"unknown_status", `"status":"`, `"status":"x`},
		{"bad_utf8", `"label":"`, "\"label\":\"\xff"},
		{"control_character", `"label":"`, "\"label\":\"\x01"},
		{"escaped_string", `"label":"`, `"label":"\u00e9\"\\`},
		{"percent_exponent", `"percent":100`, `"percent":1e2`},
		{"percent_fraction", `"percent":100`, `"percent":99.50`},
		{"percent_out_of_range", `"percent":100`, `"percent":1e999`},
		{"percent_leading_zero", `"percent":100`, `"percent":0100`},
		{"true_for_a_string", `"label":"`, `"label":true,"x":"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Replace(b, c.old, c.new, 1)
			if in == b && c.old != c.new {
				t.Fatalf("%q not in the file", c.old)
			}
			readServerBoth(t, []byte(in))
		})
	}
	// Escapes are read as encoding/json reads them, by hand.
	in := strings.Replace(b, `"label":"`, `"label":"\u00e9\"\\ \u2028`, 1)
	rest, _, _, ok := cutColumns([]byte(in))
	var f ServerFile
	if !ok || !f.scanRest(rest) || f.Label[:len("é\"\\ \u2028")] != "é\"\\ \u2028" {
		t.Errorf("a label with escapes: read by hand %v, as %q", ok, f.Label)
	}
}

// fillAll sets every field v holds, and every one of those it points to,
// to a value encoding/json writes and reads back as it was, each one
// another (n counts them): strings with what it escapes, two items a
// list, every pointer set.
func fillAll(v reflect.Value, n *int) {
	*n++
	switch v.Interface().(type) {
	case Time:
		v.Set(reflect.ValueOf(Time{time.Date(2026, 12, 1, 0, 0, *n, int(time.Millisecond), time.UTC)}))
		return
	case data.Outcome:
		v.Set(reflect.ValueOf(data.Outcomes[*n%len(data.Outcomes)]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf(`s%d <&> "é" \ %c`, *n, '\u2028'))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillAll(v.Index(i), n)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("json") == "-" {
				continue
			}
			f := v.Field(i)
			if !f.CanSet() { // an unexported struct embedded: its fields are written
				f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			}
			fillAll(f, n)
		}
	default:
		panic(fmt.Sprintf("fillAll: a field of kind %s", v.Kind()))
	}
}
