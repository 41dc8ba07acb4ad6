package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// alertsFile is the alert rules docs/operating.md shows.
var alertsFile = filepath.Join("..", "deploy", "alerts.yml")

// TestAlertRules runs `promtool test rules` on deploy/alerts.yml: the rules
// fire for a deployment that has never succeeded (no last success time is
// ever written), for one whose metrics are not there at all, and for one
// that stopped; they stay quiet for a healthy one.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian's prometheus package; .ci/tools installs it): the alert rules are not tested")
	}
	out, err := exec.CommandContext(t.Context(), promtool, "test", "rules", filepath.Join("testdata", "alerts_test.yml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(t.Context(), promtool, "check", "rules", alertsFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestAlertRulesShown: docs/operating.md shows deploy/alerts.yml as it is, and
// every metric its rules name is one a step writes (run.prom, publish.prom,
// or minute.sh's minute.prom), so neither can drift from the other.
func TestAlertRulesShown(t *testing.T) {
	rules, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(rules)+"```\n") {
		t.Error("docs/operating.md does not show deploy/alerts.yml as it is: copy it into the Metrics section's yaml block")
	}
	dir := t.TempDir()
	writeBoth(t, dir)
	written := map[string]bool{}
	for _, name := range []string{"run.prom", "publish.prom"} {
		fams, err := ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for n := range fams {
			written[n] = true
		}
	}
	script, err := os.ReadFile(filepath.Join("..", "deploy", "minute.sh"))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`prober_[a-z_]+`).FindAllString(string(rules), -1)
	if len(names) == 0 {
		t.Fatal("no prober metric in the rules")
	}
	for _, n := range names {
		if !written[n] && !strings.Contains(string(script), "# TYPE "+n+" ") {
			t.Errorf("the rules name %s, which no step writes", n)
		}
	}
}
