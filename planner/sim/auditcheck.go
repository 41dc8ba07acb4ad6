package sim

import (
	"slices"
	"sort"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/planner"
)

// check audits one planned check: once for the wire (rules S3, S9 and the
// address's slot and cadence), then for each server it is for.
func (a *Audit) check(now time.Time, T int64, c data.PlannedCheck) {
	a.checks++
	a.byReason[c.Reason]++
	x, due := c.At.Unix(), c.Due.Unix()
	listings := append([]data.Listing{{ID: c.ID, URL: c.URL}}, c.Also...)
	if len(c.Also) > 0 {
		a.shared++
		a.served += len(c.Also)
	}
	for _, o := range listings {
		if sa := a.servers[o.ID]; sa == nil || sa.removed || sa.url != o.URL {
			a.broke("listed", "%s planned at %s but not listed at %s", o.ID, c.At.Format(time.RFC3339), o.URL)
			return
		}
		if a.paused[o.ID] {
			a.broke("S8", "%s planned at %s while paused", o.ID, c.At.Format(time.RFC3339))
		}
	}
	lead := a.servers[c.ID]
	ad := a.addrs[lead.key]
	if ad != nil {
		for _, id := range ad.ids {
			if a.paused[id] && id != c.ID {
				a.broke("S8", "%s planned at %s while %s, at the same address, is paused", c.ID, c.At.Format(time.RFC3339), id)
			}
		}
	}
	if ad != nil && len(ad.ids) <= spool.MaxShared {
		var ids []string
		for _, o := range listings {
			ids = append(ids, o.ID)
		}
		if !slices.Equal(ids, ad.ids) {
			a.broke("shared", "%s planned at %s for %v, but %v are listed at %s: one check for all, the best ranked first",
				c.ID, c.At.Format(time.RFC3339), ids, ad.ids, lead.key)
		}
	}
	if c.At.Nanosecond() != 0 || x < T || x >= T+minute || !c.At.After(now) || x < due {
		a.broke("S9", "%s planned at %s: not a whole second of minute %s after the plan at %s and due %s",
			c.ID, c.At.Format(time.RFC3339Nano), time.Unix(T, 0).UTC().Format("15:04"), now.Format("15:04:05"), c.Due.Format(time.RFC3339))
	}
	cadence := int64(data.Tier(lead.groupRank) / time.Second)
	if c.Every > 0 {
		cadence = c.Every // the plan says the host's caps stretch it
	}
	a.hostCaps(c, x)
	// The address's results tell what its servers learned (rules S6, S7):
	// a server listed later at it holds only those since.
	st := lead.state
	if ad != nil {
		st = ad.state
		st.URL = c.URL
		ad.checked = true
	}
	answeredBefore := st.EverAnswered()
	gap := int64(data.RetryAfterFailure / time.Second)
	switch c.Reason {
	case data.ReasonRetry:
		last := st.LastCheck.Unix()
		switch {
		case st.LastCheck.IsZero() || st.LastStatus != data.Failing:
			a.broke("S6", "%s retried at %s without a failing check before", c.ID, c.At.Format(time.RFC3339))
		case !answeredBefore:
			a.broke("S7", "%s never answered but retried at %s", c.ID, c.At.Format(time.RFC3339))
		case x < last+gap || last+gap >= st.FailingSince.Unix()+int64(data.RetryWindow/time.Second):
			a.broke("S6", "%s retried at %s: last check %s, failing since %s", c.ID, c.At.Format(time.RFC3339),
				st.LastCheck.Format(time.RFC3339), st.FailingSince.Format(time.RFC3339))
		default:
			a.retryGap = append(a.retryGap, x-last)
		}
	case data.ReasonRoutine:
		// A shared address is due at its own slot; one that became or
		// stopped being shared during the run may still be due once at its
		// lead's.
		tier := int64(data.Tier(lead.groupRank) / time.Second)
		onSlot := func(slot time.Duration) bool { return floorMod(due-int64(slot/time.Second), tier) == 0 }
		shared := len(c.Also) > 0
		if ad != nil && ad.shared {
			shared = true
		}
		if st.RetryAfter.IsZero() && !(len(c.Also) == 0 && onSlot(planner.SlotOf(c.ID)) ||
			shared && (onSlot(planner.SlotOf(c.ID)) || onSlot(planner.SlotOfAddress(c.URL)))) {
			a.broke("S2", "%s due at %s, not at its slot %s", c.ID, c.Due.Format(time.RFC3339), planner.SlotOf(c.ID))
		}
	case data.ReasonNew:
	default:
		a.broke("S4", "%s planned for an unknown reason %q", c.ID, c.Reason)
	}
	if !st.RetryAfter.IsZero() {
		hold := min(st.RetryAfter.Add(time.Second-1).Truncate(time.Second).Unix(), st.LastCheck.Unix()+cadence)
		if x < hold {
			a.broke("RetryAfter", "%s checked at %s, before its Retry-After %s", c.ID, c.At.Format(time.RFC3339), st.RetryAfter.Format(time.RFC3339))
		}
	}
	if x/minute > due/minute {
		a.deferred++
	}
	a.longest = max(a.longest, x-due)
	// A server whose slot moved (its address came to be shared or to stand
	// alone)
	// is due at its new slot's first time after its last check, which may
	// lie before the move: it has waited only since the plan that saw the
	// move.
	if owed := max(due, lead.slotMoved); cadence > 0 && x-owed > cadence {
		a.broke("S4", "%s waited %s past due, longer than its cadence %s", c.ID, time.Duration(x-owed)*time.Second, time.Duration(cadence)*time.Second)
	}
	for _, o := range listings {
		a.listing(c, a.servers[o.ID], x, cadence)
	}
}

// listing audits a check for one of the servers it is for: rules S5 and S7
// of that server.
func (a *Audit) listing(c data.PlannedCheck, sa *serverAudit, x, cadence int64) {
	sa.cadence = cadence
	sa.stretched = c.Every > 0
	gap := int64(data.RetryAfterFailure / time.Second)
	switch c.Reason {
	case data.ReasonNew:
		if sa.first != 0 {
			a.broke("S5", "%s planned as new at %s but already checked at this address", sa.id, c.At.Format(time.RFC3339))
		}
		if sa.bootstrap || sa.joined {
			break
		}
		delay := x - sa.listedAt
		a.newDelay = append(a.newDelay, delay)
		h := a.hosts[sa.host]
		ahead := 0
		if h != nil {
			ahead = len(h.newStarts) - sort.Search(len(h.newStarts), func(i int) bool { return h.newStarts[i] >= sa.listedAt }) - 1
		}
		// Later than the target is allowed only behind other new servers
		// (30 s apart) or while the host was at its hourly cap (rule S3
		// first); that nothing else went ahead of it is checked below.
		full := h != nil && len(h.capHits) > 0 && h.capHits[len(h.capHits)-1] >= sa.listedAt-3600
		if limit := int64(data.NewServerTarget/time.Second) + int64(ahead)*int64(data.NewServerSpacing/time.Second); delay > limit && !full && !sa.everPaused {
			a.broke("S5", "%s first checked %s after it was listed, %d new servers of its host ahead of it",
				sa.id, time.Duration(delay)*time.Second, ahead)
		}
	case data.ReasonRetry:
		a.newFirst(c, x)
	case data.ReasonRoutine:
		a.newFirst(c, x)
		sa.routine++
		if sa.first == 0 && !sa.bootstrap && !sa.joined {
			a.broke("S5", "%s listed at %s was first checked as routine, not new", sa.id, time.Unix(sa.listedAt, 0).UTC().Format(time.RFC3339))
		}
	}
	if c.Reason != data.ReasonNew && sa.last != 0 && x-sa.last < gap {
		a.broke("S7", "%s checked at %s, only %s after its last check", sa.id, c.At.Format(time.RFC3339), time.Duration(x-sa.last)*time.Second)
	}
	if sa.first == 0 {
		sa.first = x
	}
	sa.last = x
	sa.checks++
}

// newFirst checks that no retry or routine check of a host goes ahead of a
// new server of that host still waiting for its first check (rules S4 and
// S5), unless the 30 s spacing of new servers kept that one out.
func (a *Audit) newFirst(c data.PlannedCheck, x int64) {
	h := a.hosts[c.Host]
	if h == nil || len(h.waiting) == 0 {
		return
	}
	spacing := int64(data.NewServerSpacing / time.Second)
	for id, n := range h.waiting {
		if n.removed || n.first != 0 || a.servers[id] != n {
			delete(h.waiting, id)
			continue
		}
		if a.pausedAt(n) || x < n.listedAt {
			continue
		}
		near := h.lastNew != 0 && x-h.lastNew < spacing
		for _, y := range a.minuteNew[c.Host] {
			near = near || (y > x-spacing && y < x+spacing)
		}
		if !near {
			a.broke("S5", "%s (%s) planned at %s while new server %s of its host waits since %s",
				c.ID, c.Reason, c.At.Format(time.RFC3339), id, time.Unix(n.listedAt, 0).UTC().Format(time.RFC3339))
		}
	}
}

// pausedAt reports whether sa or another server at its address is paused:
// the address is then not checked (rule S8).
func (a *Audit) pausedAt(sa *serverAudit) bool {
	if a.paused[sa.id] {
		return true
	}
	if ad := a.addrs[sa.key]; ad != nil && sa.url != "" {
		for _, id := range ad.ids {
			if a.paused[id] {
				return true
			}
		}
	}
	return false
}

// hostCaps counts the check toward its host's caps (rule S3) and the
// spacing of new servers (rule S5).
func (a *Audit) hostCaps(c data.PlannedCheck, x int64) {
	if c.Host == "" {
		return
	}
	h := a.host(c.Host)
	if n := len(h.starts); n > 0 && h.starts[n-1] > x {
		a.broke("S3", "%s planned at %s, before an earlier plan's check of %s", c.ID, c.At.Format(time.RFC3339), c.Host)
	}
	h.starts = append(h.starts, x)
	day := int64(24 * time.Hour / time.Second)
	if h.starts[0] <= x-day {
		h.starts = slices.Clone(h.starts[sort.Search(len(h.starts), func(i int) bool { return h.starts[i] > x-day }):])
	}
	count := func(from int64) int {
		return len(h.starts) - sort.Search(len(h.starts), func(i int) bool { return h.starts[i] >= from })
	}
	sec, hour, dayN := count(x), count(x-int64(time.Hour/time.Second)+1), len(h.starts)
	h.maxSec, h.maxHour, h.maxDay = max(h.maxSec, sec), max(h.maxHour, hour), max(h.maxDay, dayN)
	if hour >= data.HostMaxPerHour {
		h.capHits = append(h.capHits, x)
	}
	if sec > 1 || hour > data.HostMaxPerHour || dayN > data.HostMaxPerDay {
		a.broke("S3", "%s at %s: %d checks of %s in that second, %d in 60 min, %d in 24 h", c.ID, c.At.Format(time.RFC3339), sec, c.Host, hour, dayN)
	}
	if c.Reason == data.ReasonNew {
		if h.lastNew != 0 && x-h.lastNew < int64(data.NewServerSpacing/time.Second) {
			a.broke("S5", "%s at %s: new servers of %s only %ds apart", c.ID, c.At.Format(time.RFC3339), c.Host, x-h.lastNew)
		}
		h.lastNew = x
		h.newStarts = append(h.newStarts, x)
	}
}

func (a *Audit) host(name string) *hostAudit {
	h := a.hosts[name]
	if h == nil {
		h = &hostAudit{}
		a.hosts[name] = h
	}
	return h
}
