package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"plug.directory/prober/metrics"
)

// fakeCommands writes stand-ins for plan, run and publish into a new
// directory: each appends its arguments to its log (var/log/STEP.log, as
// minute.sh redirects it), prints a last line, and exits with its code.
func fakeCommands(t *testing.T, exits map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	last := map[string]string{
		"plan":    "plan: read ranked list servers.csv: open servers.csv: no such file or directory",
		"run":     "run: the disk holding var/data/journal is full",
		"publish": "published 3 servers",
	}
	for _, c := range []string{"plan", "run", "publish"} {
		script := "#!/bin/sh\necho \"" + c + " args: $*\"\necho '" + last[c] + "'\nexit " + string(rune('0'+exits[c])) + "\n"
		if err := os.WriteFile(filepath.Join(dir, c), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeLogger puts a logger(1) on a PATH of its own that records each
// message in the returned file.
func fakeLogger(t *testing.T) (pathDir, logFile string) {
	t.Helper()
	pathDir = t.TempDir()
	logFile = filepath.Join(pathDir, "syslog")
	script := "#!/bin/sh\necho \"$*\" >>" + logFile + "\n"
	if err := os.WriteFile(filepath.Join(pathDir, "logger"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return pathDir, logFile
}

// install runs deploy/install.sh into a new home with the commands of bin.
func install(t *testing.T, bin string) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "prober home")
	cmd := exec.CommandContext(t.Context(), "/bin/sh", filepath.Join("..", "..", "deploy", "install.sh"), home, bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	return home
}

// cronMinute runs the installed minute.sh as cron does: no environment but
// cron's PATH (with a recording logger before it), from the user's home
// directory, not the prober's. It returns the exit status and what the
// script printed.
func cronMinute(t *testing.T, script, pathDir string, env ...string) (int, string) {
	t.Helper()
	return cronMinuteAt(t, script, pathDir, "2100-01-01T00:00", env...)
}

// cronMinuteAt is cronMinute for the minute given.
func cronMinuteAt(t *testing.T, script, pathDir, minute string, env ...string) (int, string) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1) here; deploy/minute.sh needs it")
	}
	cmd := exec.CommandContext(t.Context(), "/bin/sh", script, minute)
	cmd.Env = append([]string{"PATH=" + pathDir + ":/usr/bin:/bin"}, env...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// minuteSuccess reads prober_minute_success by step from minute.prom.
func minuteSuccess(t *testing.T, path string) map[string]float64 {
	t.Helper()
	fams, err := metrics.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range fams["prober_minute_success"].GetMetric() {
		got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	if fams["prober_minute_last_timestamp_seconds"] == nil {
		t.Error("minute.prom has no prober_minute_last_timestamp_seconds")
	}
	return got
}

// TestInstalledMinuteKnowsItsHome: make install's home
// (here with a space in its path) has a minute.sh that finds it with no
// environment at all, a crontab and units that name it, and a config file
// whose flags reach plan and run. A failed plan reaches syslog with its
// reason and minute.prom with its step, and nothing is printed for cron
// to mail where no mail agent is.
func TestInstalledMinuteKnowsItsHome(t *testing.T) {
	home := install(t, fakeCommands(t, map[string]int{"plan": 1}))
	for f, want := range map[string]string{
		"crontab":        "* * * * * prober " + home + "/bin/minute.sh\n",
		"prober.service": " " + home + "/bin/minute.sh\n",
	} {
		b, err := os.ReadFile(filepath.Join(home, "etc", f))
		if err != nil || !strings.Contains(string(b), want) || strings.Contains(string(b), "/srv/prober") {
			t.Errorf("etc/%s: %q, %v; want %q and no /srv/prober", f, b, err, want)
		}
	}
	metricsDir := filepath.Join(home, "textfile")
	conf := "PROBER_CONTACT=\"probe@lab.test\"\nPROBER_PLAN_FLAGS=\"-first-check-soon\"\nPROBER_RUN_FLAGS=\"-lab\n  -resolve a.test:8443:127.0.0.2\"\nPROBER_METRICS=\"" + metricsDir + "\"\n"
	if err := os.WriteFile(filepath.Join(home, "etc", "prober.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	pathDir, syslog := fakeLogger(t)
	code, out := cronMinute(t, filepath.Join(home, "bin", "minute.sh"), pathDir)
	if code != 1 || out != "" {
		t.Errorf("exit %d, printed %q; want 1 and nothing", code, out)
	}
	plan := readLog(t, home, "plan")
	if !strings.Contains(plan, "plan args: -servers "+home+"/servers.csv -paused "+home+"/paused.txt -data var/data -at 2100-01-01T00:00 -first-check-soon\n") {
		t.Errorf("plan.log %q: want plan run in its home with the config's flags", plan)
	}
	msg, _ := os.ReadFile(syslog)
	if want := "-t prober-minute -p user.err -- minute 2100-01-01T00:00: plan failed: nothing run or published; var/log/plan.log says: plan: read ranked list servers.csv"; !strings.Contains(string(msg), want) {
		t.Errorf("syslog %q; want %q", msg, want)
	}
	if got := minuteSuccess(t, filepath.Join(metricsDir, "minute.prom")); got["setup"] != 1 || got["plan"] != 0 || len(got) != 2 {
		t.Errorf("minute.prom: %v; want setup 1, plan 0, nothing else", got)
	}
}

// TestMinuteReportsItsFailures: a home that cannot be entered, a config that
// does not parse and a failed run each reach syslog and minute.prom; the
// environment's flags reach run (PROBER_RUN_FLAGS, as before the config
// file), and its contact publish (PROBER_CONTACT).
func TestMinuteReportsItsFailures(t *testing.T) {
	home := install(t, fakeCommands(t, map[string]int{"run": 1}))
	script := filepath.Join(home, "bin", "minute.sh")
	metricsDir := filepath.Join(t.TempDir(), "textfile")
	for name, c := range map[string]struct {
		env     []string
		conf    string
		syslog  string
		success map[string]float64
	}{
		"home_gone": {env: []string{"PROBER_HOME=" + home + "/gone"}, syslog: "cannot enter the prober home " + home + "/gone",
			success: map[string]float64{"setup": 0}},
		"bad_config": {conf: "PROBER_RUN_FLAGS=\"-lab\n", syslog: "config " + home + "/etc/prober.conf does not parse",
			success: map[string]float64{"setup": 0}},
		"run_failed": {env: []string{"PROBER_RUN_FLAGS=-source 192.0.2.1 -v", "PROBER_CONTACT=ops@lab.test"},
			syslog:  "run failed: what its checks recorded is published; var/log/run.log says: run: the disk holding var/data/journal is full",
			success: map[string]float64{"setup": 1, "plan": 1, "run": 0, "publish": 1}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(home, "etc", "prober.conf"), []byte(c.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			pathDir, syslog := fakeLogger(t)
			code, out := cronMinute(t, script, pathDir, append(c.env, "PROBER_METRICS="+metricsDir)...)
			if code != 1 || out != "" {
				t.Errorf("exit %d, printed %q; want 1 and nothing", code, out)
			}
			if msg, _ := os.ReadFile(syslog); !strings.Contains(string(msg), c.syslog) {
				t.Errorf("syslog %q; want %q", msg, c.syslog)
			}
			got := minuteSuccess(t, filepath.Join(metricsDir, "minute.prom"))
			if len(got) != len(c.success) {
				t.Errorf("minute.prom %v, want %v", got, c.success)
			}
			for s, v := range c.success {
				if got[s] != v {
					t.Errorf("minute.prom %v, want %v", got, c.success)
				}
			}
		})
	}
	if run := readLog(t, home, "run"); !strings.Contains(run, "run args: -data var/data -at 2100-01-01T00:00 -source 192.0.2.1 -v -metrics "+metricsDir+"/run.prom\n") {
		t.Errorf("run.log %q: want PROBER_RUN_FLAGS passed", run)
	}
	if pub := readLog(t, home, "publish"); !strings.Contains(pub, " -out var/site -contact ops@lab.test ") {
		t.Errorf("publish.log %q: want PROBER_CONTACT passed as -contact", pub)
	}
}
