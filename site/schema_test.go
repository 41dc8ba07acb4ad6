package site

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// schema is a JSON Schema (draft 2020-12) of the subset the schemas under
// schema/ use. A keyword outside the subset is an error, so a schema never
// says more than this validator checks.
type schema struct {
	root map[string]any
}

var knownKeywords = map[string]bool{
	"$schema": true, "$id": true, "title": true, "$defs": true, "$ref": true, "type": true, "enum": true, "const": true,
	"properties": true, "required": true, "additionalProperties": true, "items": true, "minItems": true, "maxItems": true,
	"minimum": true, "maximum": true, "minLength": true, "pattern": true, "format": true,
	"description": true, // an annotation: nothing to check
}

// mustSchema reads schema/<name>.
func mustSchema(tb testing.TB, name string) *schema {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("schema", name))
	if err != nil {
		tb.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		tb.Fatalf("schema %s: %v", name, err)
	}
	return &schema{root: root}
}

// validate checks the JSON document b against the schema.
func (s *schema) validate(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.check(s.root, v, "$")
}

// patterns holds each pattern of the schemas compiled once per test
// binary: the trees of the publish tests validate thousands of strings.
var patterns sync.Map // pattern -> *regexp.Regexp

// compiled returns the pattern p compiled; a bad pattern panics, as
// regexp.MustCompile does.
func compiled(p string) *regexp.Regexp {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re, _ := patterns.LoadOrStore(p, regexp.MustCompile(p))
	return re.(*regexp.Regexp)
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func jsonNumber(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// equalJSON compares a decoded value with a schema constant.
func equalJSON(v, c any) bool {
	if f, ok := jsonNumber(v); ok {
		cf, ok := c.(float64)
		return ok && f == cf
	}
	return reflect.DeepEqual(v, c)
}

func (s *schema) check(sch map[string]any, v any, at string) error {
	for k := range sch {
		if !knownKeywords[k] {
			return fmt.Errorf("schema keyword %q at %s is not supported by the validator", k, at)
		}
	}
	if ref, ok := sch["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		defs, _ := s.root["$defs"].(map[string]any)
		target, _ := defs[name].(map[string]any)
		if !found || target == nil {
			return fmt.Errorf("%s: unresolved $ref %q", at, ref)
		}
		if err := s.check(target, v, at); err != nil {
			return err
		}
	}
	if t, ok := sch["type"]; ok {
		var types []string
		switch x := t.(type) {
		case string:
			types = []string{x}
		case []any:
			for _, e := range x {
				types = append(types, e.(string))
			}
		}
		got := typeOf(v)
		okType := false
		for _, want := range types {
			if want == got || (want == "number" && got == "integer") {
				okType = true
			}
		}
		if !okType {
			return fmt.Errorf("%s: %s, want %v", at, got, types)
		}
	}
	if e, ok := sch["enum"].([]any); ok {
		found := false
		for _, c := range e {
			if equalJSON(v, c) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v is not one of %v", at, v, e)
		}
	}
	if c, ok := sch["const"]; ok && !equalJSON(v, c) {
		return fmt.Errorf("%s: %v, want %v", at, v, c)
	}
	if f, ok := jsonNumber(v); ok {
		if m, ok := sch["minimum"].(float64); ok && f < m {
			return fmt.Errorf("%s: %v below minimum %v", at, f, m)
		}
		if m, ok := sch["maximum"].(float64); ok && f > m {
			return fmt.Errorf("%s: %v above maximum %v", at, f, m)
		}
	}
	if str, ok := v.(string); ok {
		if m, ok := sch["minLength"].(float64); ok && float64(len([]rune(str))) < m {
			return fmt.Errorf("%s: %q shorter than %v", at, str, m)
		}
		if p, ok := sch["pattern"].(string); ok && !compiled(p).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, p)
		}
		if f, _ := sch["format"].(string); f == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("%s: %q is not a date-time", at, str)
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if m, ok := sch["minItems"].(float64); ok && float64(len(arr)) < m {
			return fmt.Errorf("%s: %d items, want at least %v", at, len(arr), m)
		}
		if m, ok := sch["maxItems"].(float64); ok && float64(len(arr)) > m {
			return fmt.Errorf("%s: %d items, want at most %v", at, len(arr), m)
		}
		if items, ok := sch["items"].(map[string]any); ok {
			for i, e := range arr {
				if err := s.check(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := sch["properties"].(map[string]any)
		if req, ok := sch["required"].([]any); ok {
			for _, r := range req {
				if _, ok := obj[r.(string)]; !ok {
					return fmt.Errorf("%s: missing %q", at, r)
				}
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if ap, ok := sch["additionalProperties"].(bool); ok && !ap {
					return fmt.Errorf("%s: unexpected property %q", at, k)
				}
				continue
			}
			if err := s.check(ps, obj[k], at+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestSchemaValidator proves the validator rejects what each keyword
// forbids, so that a passing validation means something.
func TestSchemaValidator(t *testing.T) {
	t.Parallel()
	s := &schema{root: map[string]any{}}
	mustParse := func(src string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(src), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		schema, doc string
		ok          bool
	}{
		{`{"type":"integer"}`, `1`, true},
		{`{"type":"integer"}`, `1.5`, false},
		{`{"type":["string","null"]}`, `null`, true},
		{`{"type":"number"}`, `2`, true},
		{`{"enum":["a","b"]}`, `"c"`, false},
		{`{"const":1}`, `1`, true},
		{`{"const":1}`, `2`, false},
		{`{"minimum":0,"maximum":100}`, `100.5`, false},
		{`{"minLength":1}`, `""`, false},
		{`{"pattern":"^a"}`, `"ba"`, false},
		{`{"format":"date-time"}`, `"2026-12-02T12:00:00Z"`, true},
		{`{"format":"date-time"}`, `"yesterday"`, false},
		{`{"maxItems":1}`, `[1,2]`, false},
		{`{"minItems":1}`, `[]`, false},
		{`{"items":{"type":"string"}}`, `["a",1]`, false},
		{`{"required":["a"]}`, `{}`, false},
		{`{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"b":1}`, false},
		{`{"properties":{"a":{"type":"string"}}}`, `{"a":1}`, false},
		{`{"oneOf":[]}`, `1`, false},
	}
	for _, c := range cases {
		s.root = mustParse(c.schema)
		err := s.validate([]byte(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("schema %s, doc %s: err = %v, want ok %v", c.schema, c.doc, err, c.ok)
		}
	}
}
