package sim

import (
	"cmp"
	"strings"
	"time"

	"plug.directory/prober/data"
)

// relist notes servers added, removed or moved to another address, walking
// the old and the new list side by side in their rank order.
func (a *Audit) relist(T int64, list []data.Server) {
	old := a.list
	a.list = list
	less := func(x, y data.Server) int { return cmp.Or(cmp.Compare(x.Rank, y.Rank), strings.Compare(x.ID, y.ID)) }
	came := map[string]bool{}
	var gone []string
	i, j := 0, 0
	for i < len(old) || j < len(list) {
		c := 0
		switch {
		case i == len(old):
			c = 1
		case j == len(list):
			c = -1
		default:
			c = less(old[i], list[j])
		}
		if c < 0 {
			gone = append(gone, old[i].ID)
			i++
			continue
		}
		if c > 0 || old[i].URL != list[j].URL {
			came[list[j].ID] = true
			s := list[j]
			sa := a.servers[s.ID]
			if sa == nil || sa.url != s.URL || sa.removed {
				sa = &serverAudit{id: s.ID, url: s.URL, key: data.AddressKey(s.URL), host: data.HostOf(s.URL), listedAt: T, bootstrap: T == a.Start.Unix()}
				a.servers[s.ID] = sa
				a.listedAll++
				if ad := a.addrs[sa.key]; s.URL != "" && ad != nil && ad.checked {
					sa.joined = true
				}
				if !sa.bootstrap && !sa.joined && sa.host != "" {
					h := a.host(sa.host)
					if h.waiting == nil {
						h.waiting = map[string]*serverAudit{}
					}
					h.waiting[s.ID] = sa
				}
			}
			if sa.rank != 0 && data.Tier(sa.rank) != data.Tier(s.Rank) {
				sa.tierMoved = true
			}
			sa.rank = s.Rank
			sa.cadence = int64(data.Tier(s.Rank) / time.Second)
		}
		if c == 0 {
			i++
		}
		j++
	}
	for _, id := range gone {
		if !came[id] {
			a.servers[id].removed = true
		}
	}
	a.share(T, list)
}

// share finds the servers listed at each address, as the audit reads the
// list, not as the planner grouped them.
func (a *Audit) share(T int64, list []data.Server) {
	for _, ad := range a.addrs {
		ad.ids = ad.ids[:0]
	}
	for _, s := range list {
		if s.URL == "" {
			continue
		}
		sa := a.servers[s.ID]
		ad := a.addrs[sa.key]
		if ad == nil {
			ad = &addrAudit{}
			a.addrs[sa.key] = ad
		}
		if len(ad.ids) == 0 {
			ad.rank = s.Rank // the list is in rank order: the first is the best
		}
		ad.ids = append(ad.ids, s.ID)
		ad.shared = ad.shared || len(ad.ids) > 1
	}
	for _, s := range list {
		if sa := a.servers[s.ID]; s.URL != "" {
			ad := a.addrs[sa.key]
			if sa.groupRank != 0 && data.Tier(sa.groupRank) != data.Tier(ad.rank) {
				sa.tierMoved = true
			}
			if together := len(ad.ids) > 1; together != sa.together {
				if sa.listedAt < T {
					sa.slotMoved = T
				}
				sa.together = together
			}
			sa.groupRank = ad.rank
		} else {
			sa.groupRank = s.Rank
		}
	}
}
