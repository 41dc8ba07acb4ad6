package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/metrics"
	"plug.directory/prober/runner/fleet"
)

// minuteScript is deploy/minute.sh, the one script cron and the systemd
// timer run.
var minuteScript = filepath.Join("..", "..", "deploy", "minute.sh")

// newProberHome lays out a prober home as deploy/install.sh does (bin/ with
// the built commands), but without var/: the script must make it.
func newProberHome(t *testing.T, bin string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"plan", "run", "publish"} {
		if err := os.Symlink(filepath.Join(bin, c), filepath.Join(home, "bin", c)); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// runMinuteScript runs deploy/minute.sh for minute in home with run's
// flags and more environment, and returns its exit status.
func runMinuteScript(t *testing.T, home string, minute time.Time, runFlags string, env ...string) int {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1) here; deploy/minute.sh needs it")
	}
	cmd := exec.CommandContext(t.Context(), "/bin/sh", minuteScript, minute.Format("2006-01-02T15:04"))
	cmd.Env = append(append(os.Environ(), "PROBER_HOME="+home, "PROBER_RUN_FLAGS="+runFlags, "PROBER_CONTACT=probe@lab.test"), env...)
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		t.Errorf("minute.sh wrote %q; want everything in var/log", out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

func readLog(t *testing.T, home, step string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "var", "log", step+".log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestMinuteScript runs deploy/minute.sh as cron runs it, on a fresh prober
// home (no var/, no log/), for one minute against the demo's fleet on
// loopback: it plans, runs and publishes that minute, and every server
// then shows what its fleet server makes it show.
func TestMinuteScript(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the next minute to run it; make test runs it")
	}
	t.Parallel()
	bin := buildCommands(t)
	home := newProberHome(t, bin)
	minute := time.Now().UTC().Add(planMargin).Truncate(time.Minute).Add(time.Minute)
	lst := newListing(members(), minute)
	fl, err := fleet.Start(fleet.Config{Servers: lst.specs(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	ranked, err := lst.rankedCSV(time.Now(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(map[string][]byte{filepath.Join(home, "servers.csv"): ranked, filepath.Join(home, "paused.txt"): lst.pausedText()}); err != nil {
		t.Fatal(err)
	}
	// The lab flags (over 500 characters) in the config file, one a line.
	flags := []string{"-lab", "-ca-file " + fl.CAFile(), "-timeout 3s", "-grace 1s"}
	for _, r := range resolveArgs(fl) {
		flags = append(flags, "-resolve "+r)
	}
	if err := os.MkdirAll(filepath.Join(home, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := "PROBER_RUN_FLAGS=\"" + strings.Join(flags, "\n  ") + "\"\nPROBER_PLAN_FLAGS=\"-v\"\n"
	if err := writeFiles(map[string][]byte{filepath.Join(home, "etc", "prober.conf"): []byte(conf)}); err != nil {
		t.Fatal(err)
	}
	metricsDir := filepath.Join(home, "textfile")
	if code := runMinuteScript(t, home, minute, "-source 192.0.2.1", "PROBER_METRICS="+metricsDir); code != 0 {
		t.Fatalf("minute.sh: exit %d\nplan: %s\nrun: %s\npublish: %s", code, readLog(t, home, "plan"), readLog(t, home, "run"), readLog(t, home, "publish"))
	}
	if plan := readLog(t, home, "plan"); !strings.Contains(plan, "level=INFO") {
		t.Errorf("plan.log %q: want plan's -v from PROBER_PLAN_FLAGS", plan)
	}
	if run := readLog(t, home, "run"); !strings.Contains(run, minute.Format(time.RFC3339)+": ") || !strings.Contains(run, " completed (") {
		t.Errorf("run.log %q: want the minute's summary", run)
	}
	if pub := readLog(t, home, "publish"); !strings.Contains(pub, "published 13 servers") {
		t.Errorf("publish.log %q: want 13 servers published", pub)
	}
	for _, step := range []string{"run", "publish"} {
		fams, err := metrics.ReadFile(filepath.Join(metricsDir, step+".prom"))
		if err != nil {
			t.Fatal(err)
		}
		if mf := fams["prober_"+step+"_success"]; mf == nil || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Errorf("%s.prom: prober_%s_success %v, want 1", step, step, mf)
		}
	}
	if got := minuteSuccess(t, filepath.Join(metricsDir, "minute.prom")); len(got) != 4 || got["setup"]+got["plan"]+got["run"]+got["publish"] != 4 {
		t.Errorf("minute.prom: %v; want setup, plan, run and publish 1", got)
	}
	ps := paths{dir: home, data: filepath.Join(home, "var", "data"), site: filepath.Join(home, "var", "site")}
	rows, err := summarize(ps, lst, minute, fl)
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(rows); err != nil {
		t.Error(err)
	}
}

// TestMinuteScriptStopsAfterAFailedPlan: when plan fails (here the ranked
// list is missing), the script exits 1 and neither runs nor publishes, so
// the last published site stands; the plan log says why.
func TestMinuteScriptStopsAfterAFailedPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands; make test runs it")
	}
	t.Parallel()
	home := newProberHome(t, buildCommands(t))
	minute := time.Now().UTC().Truncate(time.Minute).Add(10 * time.Minute)
	if code := runMinuteScript(t, home, minute, ""); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if plan := readLog(t, home, "plan"); !strings.Contains(plan, "read ranked list") || !strings.Contains(plan, "plan failed: nothing run or published") {
		t.Errorf("plan.log %q: want the error and what the script did", plan)
	}
	for _, step := range []string{"run", "publish"} {
		if l := readLog(t, home, step); l != "" {
			t.Errorf("%s ran after the failed plan: %q", step, l)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "var", "site", "index.json")); !os.IsNotExist(err) {
		t.Errorf("a site was published after the failed plan: %v", err)
	}
}
