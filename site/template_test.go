package site

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
)

// TestJSONInTemplates meets the JSON the way a site build
// does: a Go template (Hugo's are Go templates) reaches every uptime
// window of a published server file by dot syntax, which `24h` keys
// defeat, and the old keys still hold the same figures for one release.
func TestJSONInTemplates(t *testing.T) {
	t.Parallel()
	f := newStandard(t)
	f.MustPublish()
	b, err := os.ReadFile(filepath.Join(f.out, "servers", "alpha.json"))
	if err != nil {
		t.Fatal(err)
	}
	var page map[string]any
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatal(err)
	}
	tmpl := template.Must(template.New("uptime").Option("missingkey=error").Parse(
		`{{.uptime.last_24h.percent}} {{.uptime.last_7d.percent}} {{.uptime.last_30d.percent}} {{.uptime.last_30d.counted}}`))
	var out strings.Builder
	if err := tmpl.Execute(&out, page); err != nil {
		t.Fatalf("a template cannot reach the uptime windows: %v", err)
	}
	sf := readServerFile(t, f, "alpha")
	if got, want := out.String(), strings.Join([]string{pct(sf.Uptime.Day.Percent), pct(sf.Uptime.Week.Percent), pct(sf.Uptime.Month.Percent)}, " ")+" "+itoa(sf.Uptime.Month.Counted); got != want {
		t.Errorf("template says %q; the file's old keys say %q", got, want)
	}
}

func pct(p *float64) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
