package planner

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// placeAll places the checks owed, in the order of rule S4 (new, then
// retries, then routine by how overdue, then rank), each at the first
// second its host's caps allow, records them in the ledger and the
// report, and defers
// those that do not fit.
func (p *pass) placeAll() {
	start, cands, servers, hosts, sh, l, rep := p.start, p.cands, p.in.Servers, p.hosts, &p.sh, p.l, p.rep
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.due, b.due), cmp.Compare(a.server, b.server))
	})
	for _, c := range cands {
		second, ok := max(c.due, start), true
		if c.host >= 0 {
			second, ok = place(&hosts.hosts[c.host], start, second, c.class)
		}
		if !ok {
			rep.Deferred++
			rep.Longest = max(rep.Longest, time.Duration(start+minute-c.due)*time.Second)
			continue
		}
		s := servers[c.server]
		e := &l.Servers[c.server]
		e.PrevPlanned, e.PrevReason = e.Planned, e.Reason
		e.Planned, e.Reason, e.NextDue = second, c.class.code(), second
		pc := data.PlannedCheck{
			At: time.Unix(second, 0).UTC(), ID: s.ID, URL: s.URL, Reason: c.class.code().String(),
			Due: time.Unix(c.due, 0).UTC(), Rank: s.Rank,
			Protocol: c.protocol, Transport: c.transport, Also: sh.also(c.server, servers),
		}
		if c.host >= 0 {
			h := &hosts.hosts[c.host]
			pc.Host = h.name
			if h.stretch > stretchUnit {
				pc.Every = int64(e.Cadence)
			}
		}
		rep.Checks = append(rep.Checks, pc)
		rep.Longest = max(rep.Longest, time.Duration(second-c.due)*time.Second)
		switch c.class {
		case classNew:
			rep.New++
		case classRetry:
			rep.Retry++
		default:
			rep.Routine++
		}
		if c.again {
			rep.Again++
		}
	}
	for i := range hosts.hosts {
		if h := &hosts.hosts[i]; h.changed {
			l.Hosts[h.name] = h.starts
		}
	}
	slices.SortFunc(rep.Checks, func(a, b data.PlannedCheck) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ID, b.ID))
	})
}

// place finds the first second from from on in the minute starting at
// start where a check of host h of class why keeps the caps of rule S3 (and
// for a new server's first check, the spacing of rule S5), records it, and
// returns it. Routine checks leave the top NewReserve of the hourly cap to
// new servers, retries half of it, so that a new server on a host at its
// cap is still checked within minutes.
func place(h *hostWork, start, from int64, why class) (int64, bool) {
	spacing := int64(data.NewServerSpacing / time.Second)
	isNew := why == classNew
	perHour := data.HostMaxPerHour
	switch why {
	case classRetry:
		perHour -= NewReserve / 2
	case classAgain, classRoutine:
		perHour -= NewReserve
	}
	for second := from; second < start+minute; second++ {
		if h.used&(1<<(second-start)) != 0 {
			continue
		}
		// Every window of 60 min or 24 h that holds second starts after
		// second-3600 (second-86400) and no start is planned after this
		// minute, so counting from there bounds them all.
		if len(h.starts)-lowerBound(h.starts, second-int64(time.Hour/time.Second)+1) >= perHour ||
			len(h.starts)-lowerBound(h.starts, second-int64(24*time.Hour/time.Second)+1) >= data.HostMaxPerDay {
			continue
		}
		if isNew && newNear(h.starts, second, spacing) {
			continue
		}
		i := lowerBound(h.starts, second)
		h.starts = slices.Insert(slices.Clip(h.starts), i, spool.MakeHostStart(second, isNew))
		h.used |= 1 << (second - start)
		h.changed = true
		return second, true
	}
	return 0, false
}

// newNear reports whether a new server's first check starts on the host
// less than spacing seconds from x.
func newNear(starts []spool.HostStart, x, spacing int64) bool {
	for i := lowerBound(starts, x-spacing+1); i < len(starts) && starts[i].Unix() < x+spacing; i++ {
		if starts[i].New() {
			return true
		}
	}
	return false
}

// lowerBound returns the index of the first start at or after unix second u.
func lowerBound(starts []spool.HostStart, u int64) int {
	v := spool.MakeHostStart(u, false)
	return sort.Search(len(starts), func(i int) bool { return starts[i] >= v })
}

// takeBack undoes what planning the minute starting at start recorded, so
// it can be planned again: it is the ledger's last minute.
func takeBack(l *spool.Ledger, start int64) {
	for h, starts := range l.Hosts {
		if i := lowerBound(starts, start); i < len(starts) {
			l.Hosts[h] = slices.Clip(starts[:i])
		}
	}
	for i := range l.Servers {
		if s := &l.Servers[i]; s.Planned >= start {
			s.Planned, s.Reason = s.PrevPlanned, s.PrevReason
		}
	}
}

// pruneHosts forgets starts that no window holding the minute starting at
// start, or a later one, can contain.
func pruneHosts(l *spool.Ledger, start int64) {
	keep := start - int64(24*time.Hour/time.Second) + 1
	for h, starts := range l.Hosts {
		i := lowerBound(starts, keep)
		switch {
		case i == len(starts):
			delete(l.Hosts, h)
		case i > 0:
			l.Hosts[h] = slices.Clone(starts[i:])
		}
	}
}
