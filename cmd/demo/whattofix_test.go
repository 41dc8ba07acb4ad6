package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plug.directory/prober/metrics"
)

// mixedCommands returns a directory of the built plan, run and publish,
// with a stand-in (fakeCommands's, exiting 0) for each step in fake.
func mixedCommands(t *testing.T, fake ...string) string {
	t.Helper()
	built, fakes := buildCommands(t), fakeCommands(t, nil)
	dir := t.TempDir()
	for _, c := range []string{"plan", "run", "publish"} {
		from := filepath.Join(built, c)
		for _, f := range fake {
			if f == c {
				from = filepath.Join(fakes, c)
			}
		}
		if err := os.Symlink(from, filepath.Join(dir, c)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// minuteErrors reads prober_minute_error's error label by step from
// minute.prom.
func minuteErrors(t *testing.T, path string) map[string]string {
	t.Helper()
	fams, err := metrics.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range fams["prober_minute_error"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		got[labels["step"]] = labels["error"]
	}
	return got
}

// TestMinuteSaysWhatToFix: each failure an operator meets in an installed
// home (run as cron runs it, with a logger that drops every message, as on
// a host without syslog) gives one line in var/log/minute.log and the same
// in minute.prom, naming the file or setting and what to do; the failures
// that are none (servers.csv gone after a good list, a server listed
// without an address) fail nothing and warn of nothing.
func TestMinuteSaysWhatToFix(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands; make test runs it")
	}
	t.Parallel()
	const list = "id,rank,url,added\na-1,1,https://a.test:8443/mcp,2026-12-01T00:00:00Z\nlocal,2,,2026-12-01T00:00:00Z\n"
	for _, tc := range []struct {
		name  string
		fake  []string          // steps run by a stand-in that succeeds
		files map[string]string // in the home; "" removes the file
		conf  string            // etc/prober.conf; @METRICS@ is the metrics directory
		log   int64             // bytes already in var/log/run.log
		then  map[string]string // files changed before a second minute, as files
		step  string            // the step that fails, "" for none
		want  string            // in minute.log and minute.prom's error (when step is set)
	}{
		{name: "run_flags_typo", files: map[string]string{"servers.csv": list, "paused.txt": ""},
			conf: "PROBER_CONTACT=\"probe@lab.test\"\nPROBER_RUN_FLAGS=\"-lab -resolv a.test:8443:127.0.0.2\"\nPROBER_METRICS=\"@METRICS@\"\n",
			step: "run", want: "run failed: what its checks recorded is published; var/log/run.log says: run: flag provided but not defined: -resolv"},
		{name: "config_does_not_parse", files: map[string]string{"servers.csv": list, "paused.txt": ""},
			conf: "PROBER_METRICS=\"@METRICS@\"\nPROBER_CONTACT=\"probe@lab.test\"\nPROBER_RUN_FLAGS=\"-lab\n",
			step: "setup", want: "/etc/prober.conf does not parse: line 4: Syntax error: Unterminated quoted string; fix it (sh -n "},
		{name: "no_lists", conf: "PROBER_CONTACT=\"probe@lab.test\"\nPROBER_METRICS=\"@METRICS@\"\n",
			step: "plan", want: "/servers.csv: no such file or directory (the ranked list goes there: CSV id,rank,url,added); read paused list: open HOME/paused.txt: no such file or directory (the paused list goes there"},
		{name: "no_contact", fake: []string{"run"}, files: map[string]string{"servers.csv": list, "paused.txt": ""},
			conf: "PROBER_CONTACT=\"\"\nPROBER_METRICS=\"@METRICS@\"\n",
			step: "publish", want: "publish not run: PROBER_CONTACT is empty: set the operator's e-mail address in HOME/etc/prober.conf"},
		{name: "servers_gone", fake: []string{"run"}, files: map[string]string{"servers.csv": list, "paused.txt": ""},
			conf: "PROBER_CONTACT=\"probe@lab.test\"\nPROBER_METRICS=\"@METRICS@\"\n", then: map[string]string{"servers.csv": ""}},
		{name: "log_rotated", fake: []string{"plan", "run", "publish"}, log: 10<<20 + 1,
			conf: "PROBER_CONTACT=\"probe@lab.test\"\nPROBER_METRICS=\"@METRICS@\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := install(t, mixedCommands(t, tc.fake...))
			metricsDir := filepath.Join(home, "textfile")
			files := map[string]string{"etc/prober.conf": strings.ReplaceAll(tc.conf, "@METRICS@", metricsDir)}
			for k, v := range tc.files {
				files[k] = v
			}
			change := func(files map[string]string) {
				for name, text := range files {
					p := filepath.Join(home, name)
					if text == "" && name != "paused.txt" {
						if err := os.Remove(p); err != nil {
							t.Fatal(err)
						}
						continue
					}
					if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			change(files)
			runLog := filepath.Join(home, "var", "log", "run.log")
			if tc.log > 0 {
				if err := os.WriteFile(runLog, make([]byte, tc.log), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dropping := fakeCommands(t, nil) // a directory for a logger that drops all
			if err := os.WriteFile(filepath.Join(dropping, "logger"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			script := filepath.Join(home, "bin", "minute.sh")
			code, out := cronMinuteAt(t, script, dropping, "2100-01-01T00:00")
			if tc.then != nil {
				change(tc.then)
				code, out = cronMinuteAt(t, script, dropping, "2100-01-01T00:01")
			}
			want := strings.ReplaceAll(tc.want, "HOME", home)
			minuteLog := readLog(t, home, "minute")
			success := minuteSuccess(t, filepath.Join(metricsDir, "minute.prom"))
			errs := minuteErrors(t, filepath.Join(metricsDir, "minute.prom"))
			if tc.step == "" {
				if code != 0 || out != "" || minuteLog != "" || len(errs) != 0 {
					t.Errorf("exit %d, printed %q, minute.log %q, minute.prom errors %v; want 0 and nothing", code, out, minuteLog, errs)
				}
				for s, ok := range success {
					if ok != 1 {
						t.Errorf("minute.prom: step %s %v, want 1", s, ok)
					}
				}
			} else {
				lines := strings.Split(strings.TrimSuffix(minuteLog, "\n"), "\n")
				if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], want) {
					t.Errorf("exit %d, minute.log %q; want 1 and one line with %q", code, minuteLog, want)
				}
				if success[tc.step] != 0 || len(errs) != 1 || !strings.Contains(errs[tc.step], want) {
					t.Errorf("minute.prom: success %v, errors %v; want %s failed with %q", success, errs, tc.step, want)
				}
			}
			switch tc.name {
			case "servers_gone":
				if pub := readLog(t, home, "publish"); !strings.Contains(pub, "the last good list") || strings.Count(pub, "published 2 servers") != 2 {
					t.Errorf("publish.log %q: want both minutes published from the last good list, and why", pub)
				}
				if pub := readLog(t, home, "publish"); strings.Contains(pub, "1 no address") && strings.Contains(pub, "level=WARN msg=\"ranked list") {
					t.Errorf("publish.log %q: the server listed without an address is a warning", pub)
				}
			case "log_rotated":
				old, err := os.Stat(runLog + ".1")
				if err != nil || old.Size() != tc.log {
					t.Errorf("run.log.1: %v, %v; want the %d bytes run.log held", old, err, tc.log)
				}
				if cur, err := os.Stat(runLog); err != nil || cur.Size() > 1024 {
					t.Errorf("run.log: %v, %v; want this minute's lines only", cur, err)
				}
			}
		})
	}
}
