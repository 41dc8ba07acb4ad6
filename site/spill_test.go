package site

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"plug.directory/prober/data"
)

// TestSpillCodecAsJSON: a result read back from the spill is the one the
// JSON of the journal gives back, every field of it: each result of the
// table has every field that can hold something set (fill, so a field
// added to data.Result and not to the spill's record fails here), or
// left nil or empty where JSON reads nil, with times of zones UTC, the
// local one and others, and pointers to zero values; read once without
// keeping strings, twice keeping them (the second time found kept).
func TestSpillCodecAsJSON(t *testing.T) {
	full := data.Result{}
	fill(reflect.ValueOf(&full).Elem(), 1)
	zeros := full
	zeros.TLS = &data.TLSInfo{}
	zeros.Timings = &data.Timings{DNS: new(time.Duration(0)), FirstByte: []time.Duration{}}
	zeros.Support = &data.ProtocolSupport{Session: new(false), Versions: []string{}}
	zeros.Tools, zeros.ToolProblems = []string{}, []data.ToolProblem{}
	east := full
	east.Started = time.Date(2026, 3, 29, 1, 30, 0, 7, time.FixedZone("CEST", 2*3600))
	east.Finished = time.Date(2026, 3, 29, 1, 30, 0, 7, time.Local)
	east.Planned = time.Date(2026, 3, 29, 1, 30, 0, 7, time.FixedZone("", -90*60))
	for name, r := range map[string]data.Result{"every field": full, "pointers to zeros, empty slices": zeros, "zones": east, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var want data.Result
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			rec := appendResult([]byte("before"), &r)
			body := &recordReader{b: rec[len("before"):]}
			if n := body.uvarint(); n != uint64(len(body.b)) {
				t.Fatalf("the record says %d bytes and has %d", n, len(body.b))
			}
			strs := map[string]string{}
			for _, d := range []*recordReader{{b: body.b}, {b: body.b, strs: strs}, {b: body.b, strs: strs}} {
				got, err := d.result()
				if err != nil {
					t.Fatal(err)
				}
				if path := differ(reflect.ValueOf(got), reflect.ValueOf(want), "Result"); path != "" {
					t.Errorf("%s: read back from the spill, not as from JSON:\n got %+v\nwant %+v", path, got, want)
				}
			}
			whole := rec[len(rec)-len(body.b):]
			for cut := range len(whole) {
				if _, err := (&recordReader{b: whole[:cut]}).result(); err == nil {
					t.Fatalf("a record cut to %d of its %d bytes read without error", cut, len(whole))
				}
			}
		})
	}
}

// fill sets every settable field under v to a value not zero, distinct by
// seed, and every pointer to a value.
func fill(v reflect.Value, seed int) int {
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, seed, time.UTC)))
		return seed + 1
	case v.Type() == reflect.TypeFor[data.Outcome]():
		v.Set(reflect.ValueOf(data.NeedsKey))
		return seed + 1
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				seed = fill(v.Field(i), seed)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		seed = fill(v.Elem(), seed)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			seed = fill(v.Index(i), seed)
		}
	case reflect.String:
		v.SetString("s" + string(rune('A'+seed%26)) + "é<&>\"")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed) * -1_000_003)
	case reflect.Uint8:
		v.SetUint(uint64(seed))
	default:
		panic("fill: a field of kind " + v.Kind().String())
	}
	return seed + 1
}

// differ returns the path of the first value in which a and b differ, ""
// when none: times by instant, offset and zone (UTC, local or another),
// nil and empty apart.
func differ(a, b reflect.Value, path string) string {
	if a.Type() == reflect.TypeFor[time.Time]() {
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		na, oa := ta.Zone()
		nb, ob := tb.Zone()
		if !ta.Equal(tb) || na != nb || oa != ob || (ta.Location() == time.Local) != (tb.Location() == time.Local) || (ta.Location() == time.UTC) != (tb.Location() == time.UTC) {
			return path
		}
		return ""
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if p := differ(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Pointer, reflect.Slice:
		if a.IsNil() != b.IsNil() {
			return path
		}
		if a.Kind() == reflect.Pointer {
			if a.IsNil() {
				return ""
			}
			return differ(a.Elem(), b.Elem(), path)
		}
		if a.Len() != b.Len() {
			return path
		}
		for i := range a.Len() {
			if p := differ(a.Index(i), b.Index(i), path); p != "" {
				return p
			}
		}
	default:
		if !a.Equal(b) {
			return path
		}
	}
	return ""
}
