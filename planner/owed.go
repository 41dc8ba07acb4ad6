package planner

import (
	"sync"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// collectOwed reads the states of the servers looked at, works out their
// due time and keeps the checks owed by the end of the minute (p.cands),
// side by side on every core.
func (p *pass) collectOwed() error {
	start, in, hosts, sh, l, m, rep := p.start, p.in, p.hosts, &p.sh, p.l, &p.m, p.rep
	states := in.States
	if states == nil && in.StatesOf != nil {
		// The ids of the servers looked at; nil, every one, when reading
		// every state costs less than picking.
		var ids []string
		if len(m.look) < len(in.Servers)/4 {
			ids = make([]string, 0, len(m.look))
			for _, i := range m.look {
				ids = append(ids, in.Servers[i].ID)
				for _, f := range sh.follows[i] {
					ids = append(ids, in.Servers[f].ID)
				}
			}
		}
		var err error
		if states, err = in.StatesOf(ids); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	var cands []candidate
	var wait waiting
	inParallel(len(m.look), func(lo, hi int) {
		var mine []candidate
		var myWait waiting
		for _, i := range m.look[lo:hi] {
			s := &in.Servers[i]
			host := hosts.ofServer[i]
			e := m.out[i]
			cad := newCadence(sh.slot(int(i), s), s.Rank, hosts.stretch(host))
			st, has := sh.state(states, int(i), in.Servers)
			seen := sh.view(e, i)
			seen.FirstSeen = sh.firstSeen(m.out, int(i))
			lost := p.lost(seen, st, has)
			why, due := p.owed(seen, cad, st, has, lost)
			if !has && seen.Planned == 0 && seen.FirstSeen <= l.Created && due >= start+minute {
				myWait.add(due)
			}
			e.Cadence = int32(cad.every())
			e.NextDue = due
			e.Seen = 0
			if has {
				e.Seen = st.LastCheck.Unix()
			}
			if due < start+minute {
				c := candidate{server: int(i), host: host, class: why, due: due, again: lost && due == seen.Planned}
				if has {
					c.protocol, c.transport = st.Protocol, st.Transport
				}
				mine = append(mine, c)
			}
			m.out[i] = e
		}
		mu.Lock()
		cands = append(cands, mine...)
		wait.merge(myWait)
		mu.Unlock()
	})
	rep.Waiting = wait.n
	if wait.n > 0 {
		rep.FirstWait, rep.LastWait = time.Unix(wait.first, 0).UTC(), time.Unix(wait.last, 0).UTC()
	}
	p.cands = cands
	return nil
}

// lost reports whether the last check planned of e was lost (see
// Input.Running): its minute has begun, no run of it is going, and no
// result came from it (a result starts at its planned second or later,
// rule S9).
func (p *pass) lost(e spool.LedgerServer, st data.State, has bool) bool {
	if e.Planned == 0 || has && st.LastCheck.Unix() >= e.Planned {
		return false
	}
	m := e.Planned - e.Planned%minute
	return m <= p.now && !p.in.Running[m]
}

// owed returns why and from when a server is owed its next check, as unix
// seconds; a due after the minute planned means nothing is owed in it. A
// lost check (see pass.lost) is owed again from its planned second, with
// its reason: ahead of routine checks, behind new ones and retries (rule
// S4).
func (p *pass) owed(e spool.LedgerServer, cad cadence, st data.State, has, lost bool) (why class, due int64) {
	gap := int64(data.RetryAfterFailure / time.Second)
	last := e.Planned
	var lastCheck int64
	if has {
		lastCheck = st.LastCheck.Unix()
		last = max(last, lastCheck)
	}
	switch {
	case lost:
		why, due = classAgain, e.Planned
		switch e.Reason {
		case spool.CodeNew:
			why = classNew
		case spool.CodeRetry:
			why = classRetry
		}
	case !has && e.Planned == 0:
		switch {
		case e.FirstSeen > p.l.Created: // rule S5
			why, due = classNew, e.FirstSeen
		case p.in.FirstCheckSoon: // listed at the first plan: as soon as the caps allow
			why, due = classRoutine, e.FirstSeen
		default: // listed at the first plan: at its slot
			why, due = classRoutine, cad.next(e.FirstSeen)
		}
	case !has:
		// Planned, no result yet: still running, or lost. A lost first
		// check is planned again once it should long have finished.
		if e.Reason == spool.CodeNew && e.Planned+int64(data.NewServerTarget/time.Second) <= p.start {
			why, due = classNew, e.Planned+int64(data.NewServerTarget/time.Second)
		} else {
			why, due = classRoutine, cad.next(e.Planned+gap)
		}
	case st.LastStatus == data.Failing && st.EverAnswered() && e.Planned <= lastCheck &&
		lastCheck+gap < st.FailingSince.Unix()+int64(data.RetryWindow/time.Second):
		why, due = classRetry, lastCheck+gap // rule S6; rule S7 keeps never-answered servers out
	default:
		why, due = classRoutine, cad.next(last+gap)
	}
	if due < e.Resume { // paused until then: owed nothing from before
		if why == classRoutine || why == classAgain {
			why, due = classRoutine, cad.next(e.Resume)
		} else {
			due = e.Resume
		}
	}
	if has && !st.RetryAfter.IsZero() {
		// Retry-After: not before it, but never later than the usual pace.
		hold := min(ceilSecond(st.RetryAfter), lastCheck+cad.every())
		due = max(due, hold)
	}
	return why, due
}

func ceilSecond(t time.Time) int64 {
	u := t.Unix()
	if t.Nanosecond() > 0 {
		u++
	}
	return u
}

// waiting gathers the servers listed at the first plan that wait for the
// slot of their first check.
type waiting struct {
	n           int
	first, last int64 // unix s: the earliest and the latest slot
}

func (w *waiting) add(due int64) {
	if w.n == 0 || due < w.first {
		w.first = due
	}
	w.last = max(w.last, due)
	w.n++
}

func (w *waiting) merge(o waiting) {
	if o.n == 0 {
		return
	}
	if w.n == 0 || o.first < w.first {
		w.first = o.first
	}
	w.last = max(w.last, o.last)
	w.n += o.n
}
