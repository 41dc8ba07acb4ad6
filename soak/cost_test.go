package soak

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usage is what a step cost: CPU time (user and system, the whole
// process's: the scripted servers' share is in run's), bytes read and
// written (/proc/self/io's rchar and wchar: files and sockets), and
// allocations.
type usage struct {
	cpu           time.Duration
	read, written int64
	allocs        uint64
	calls         int
}

func sample() usage {
	var u usage
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if f, err := os.Open("/proc/self/io"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ": ")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "rchar":
				u.read = n
			case "wchar":
				u.written = n
			}
		}
		f.Close()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.allocs = ms.Mallocs
	return u
}

// measure runs f and adds what it cost to u.
func (u *usage) measure(f func()) {
	before := sample()
	f()
	after := sample()
	u.cpu += after.cpu - before.cpu
	u.read += after.read - before.read
	u.written += after.written - before.written
	u.allocs += after.allocs - before.allocs
	u.calls++
}

// per returns u for one of n units (a call, a check).
func (u usage) per(n int) usage {
	if n == 0 {
		return usage{}
	}
	return usage{cpu: u.cpu / time.Duration(n), read: u.read / int64(n), written: u.written / int64(n), allocs: u.allocs / uint64(n), calls: 1}
}

// dayCost is one simulated day: what its steps cost and, at its end, the
// bytes on disk of each directory of the data directory and of the site.
type dayCost struct {
	day                time.Time
	plan, run, publish usage
	checks             int
	listed             int
	disk               map[string]int64
}

// newDay closes the day before (its disk) and opens day.
func (s *soak) newDay(day time.Time) {
	if s.today != nil {
		s.today.disk = s.disk()
		s.costs = append(s.costs, *s.today)
		s.logDay(*s.today)
	}
	listed := 0
	for _, sv := range s.servers {
		if s.run.listedAt(sv.life, day) {
			listed++
		}
	}
	s.today = &dayCost{day: day, listed: listed}
}

// disk returns the bytes of each top directory of the data directory
// (data/results, ...) and of the site (out).
func (s *soak) disk() map[string]int64 {
	sizes := map[string]int64{}
	for root, name := range map[string]string{s.dir: "data/", s.out: "out"} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			key := name
			if name == "data/" {
				rel, _ := filepath.Rel(root, path)
				top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
				key += top
			}
			sizes[key] += info.Size()
			return nil
		})
	}
	return sizes
}

// logDay logs what day d cost: plan and publish a call, run a check.
func (s *soak) logDay(d dayCost) {
	plan, run, publish := d.plan.per(d.plan.calls), d.run.per(d.checks), d.publish.per(d.publish.calls)
	var disk int64
	for _, n := range d.disk {
		disk += n
	}
	s.t.Logf("%s: %d listed, %d checks, %d B on disk; plan %d× %v cpu %d B read %d B written %d allocs; run %v cpu/check %d B read %d B written %d allocs; publish %d× %v cpu %d B read %d B written %d allocs",
		d.day.Format("2006-01-02"), d.listed, d.checks, disk,
		d.plan.calls, plan.cpu, plan.read, plan.written, plan.allocs,
		run.cpu, run.read, run.written, run.allocs,
		d.publish.calls, publish.cpu, publish.read, publish.written, publish.allocs)
}

// report logs each day's costs and the disk at the end, with a year
// extrapolated from the last day's growth.
func (s *soak) report() {
	s.newDay(s.today.day.Add(24 * time.Hour)) // the last day, closed
	last := s.costs[len(s.costs)-1]
	var names []string
	for k := range last.disk {
		names = append(names, k)
	}
	slices.Sort(names)
	var total int64
	for _, k := range names {
		total += last.disk[k]
		s.t.Logf("disk after %d days: %-14s %12d B", len(s.costs), k, last.disk[k])
	}
	s.t.Logf("disk after %d days: %-14s %12d B (%d servers listed)", len(s.costs), "total", total, last.listed)
	var cpu time.Duration
	minutes := 0
	for _, d := range s.costs {
		cpu += d.plan.cpu + d.run.cpu + d.publish.cpu
		minutes += d.plan.calls
	}
	s.t.Logf("time: %v cpu for %d minutes with work (%v a minute), %d checks", cpu, minutes, cpu/time.Duration(max(minutes, 1)), len(s.checks))
}

// noise is how much more a unit of work may cost on the last day than on
// the tenth, on a loaded machine, before the cost is said to grow with the
// age of the data: generous, for timers and a shared CPU.
const noise = 4

// costGrowth fails when a step's cost for a unit of its work (a plan, a
// check run, a publish) on the last day is more than noise times that of
// day 10 (or the middle day of a shorter run): the days have the same
// work, only the data is older.
func (s *soak) costGrowth() {
	if len(s.costs) < 2 {
		return
	}
	early := s.costs[min(9, len(s.costs)/2)]
	late := s.costs[len(s.costs)-1]
	steps := []struct {
		name        string
		early, late usage
	}{
		{"plan", early.plan.per(early.plan.calls * early.listed), late.plan.per(late.plan.calls * late.listed)},
		{"run", early.run.per(early.checks), late.run.per(late.checks)},
		{"publish", early.publish.per(early.publish.calls * early.listed), late.publish.per(late.publish.calls * late.listed)},
	}
	for _, st := range steps {
		for _, m := range []struct {
			what        string
			early, late float64
			floor       float64 // below it a ratio is noise
		}{
			{"cpu", float64(st.early.cpu), float64(st.late.cpu), float64(200 * time.Microsecond)},
			{"bytes read", float64(st.early.read), float64(st.late.read), 64 << 10},
			{"bytes written", float64(st.early.written), float64(st.late.written), 64 << 10},
			{"allocations", float64(st.early.allocs), float64(st.late.allocs), 2000},
		} {
			if m.late > noise*max(m.early, m.floor) {
				s.t.Errorf("%s: %s a unit %.0f on %s, %.0f on %s: %.1f× (more than %d×) with the same fleet, older data",
					st.name, m.what, m.early, early.day.Format("2006-01-02"), m.late, late.day.Format("2006-01-02"), m.late/max(m.early, 1), noise)
			}
		}
	}
}
