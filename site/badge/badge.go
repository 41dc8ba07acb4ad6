// Package badge makes a server's four shields.io badges from its record
// (Of: status, 30-day uptime, latency, certificate; written under Dirs) and
// the links to its badges, feed and strip that its file publishes (LinksOf).
package badge

import (
	"fmt"
	"strconv"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// Badge is badges/<id>.json in the shields.io endpoint format.
type Badge struct {
	SchemaVersion int    `json:"schemaVersion"` // always 1
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

// Label is the left-hand text of every badge.
const Label = "MCP check"

var badgeColors = map[data.Outcome]string{
	data.Working:      "brightgreen",
	data.NeedsKey:     "green",
	data.Refused:      "yellow",
	data.NotCheckable: "lightgrey",
	data.Failing:      "red",
	data.Paused:       "inactive",
	data.Pending:      "lightgrey",
}

// StatusOf returns the badge of a server shown with status o.
func StatusOf(o data.Outcome) Badge {
	return Badge{SchemaVersion: 1, Label: Label, Message: o.Label(), Color: badgeColors[o]}
}

// Labels of the badges beside the status badge.
const (
	UptimeBadgeLabel  = "uptime 30d"
	LatencyBadgeLabel = "latency"
)

// uptimeColors gives the colour of an uptime badge: the first whose
// threshold the percentage reaches.
var uptimeColors = []struct {
	min   float64
	color string
}{{99, "brightgreen"}, {95, "green"}, {90, "yellowgreen"}, {75, "yellow"}, {50, "orange"}, {0, "red"}}

// UptimeOf returns badges-uptime/<id>.json: the 30-day uptime, or "no
// counted checks" when nothing counted.
func UptimeOf(u record.Uptime) Badge {
	b := Badge{SchemaVersion: 1, Label: UptimeBadgeLabel, Message: "no counted checks", Color: "lightgrey"}
	if u.Percent == nil {
		return b
	}
	b.Message = fmt.Sprintf("%s%%", record.TrimPercent(*u.Percent))
	for _, c := range uptimeColors {
		if *u.Percent >= c.min {
			b.Color = c.color
			break
		}
	}
	return b
}

// latencyColors gives the colour of a latency badge: the first whose
// bound the median is within.
var latencyColors = []struct {
	maxMS int64
	color string
}{{500, "brightgreen"}, {1000, "green"}, {2000, "yellowgreen"}, {5000, "yellow"}, {15000, "orange"}}

// LatencyOf returns badges-latency/<id>.json: the median latency of
// the answered checks of the last 30 days (p50MS nil: none answered).
func LatencyOf(p50MS *int64) Badge {
	b := Badge{SchemaVersion: 1, Label: LatencyBadgeLabel, Message: "no answered checks", Color: "lightgrey"}
	if p50MS == nil {
		return b
	}
	b.Message, b.Color = fmt.Sprintf("%d ms", *p50MS), "red"
	for _, c := range latencyColors {
		if *p50MS <= c.maxMS {
			b.Color = c.color
			break
		}
	}
	return b
}

// LinksOf returns the names of a server's badges and feed and the
// Markdown that shows its badges.
func LinksOf(id string) record.BadgeLinks {
	l := record.BadgeLinks{Status: "badges/" + id + ".json", Uptime: "badges-uptime/" + id + ".json",
		Latency: "badges-latency/" + id + ".json", Feed: "feeds/" + id + ".atom", Cert: "badges-certificate/" + id + ".json"}
	var md []string
	for _, b := range []struct{ alt, path string }{{Label, l.Status}, {UptimeBadgeLabel, l.Uptime}, {LatencyBadgeLabel, l.Latency}, {CertificateLabel, l.Cert}} {
		md = append(md, fmt.Sprintf("[![%s](https://img.shields.io/endpoint?url=%s/%s)](%s)", b.alt, record.SiteURL, b.path, record.PageURL(id)))
	}
	l.Markdown = strings.Join(md, " ")
	l.Strip = strip.Dir + "/" + id + ".svg"
	alt := id + ": uptime per day, last " + strconv.Itoa(record.DailyLen) + " days"
	l.StripMarkdown = fmt.Sprintf("[![%s](%s/%s)](%s)", alt, record.SiteURL, l.Strip, record.PageURL(id))
	l.StripHTML = fmt.Sprintf(`<a href="%s"><img src="%s/%s" alt="%s" width="%d" height="%d"></a>`, record.PageURL(id), record.SiteURL, l.Strip, alt, record.DailyLen*strip.BarStep, strip.FileHeight)
	return l
}

// Dirs are the directories of a server's badges, in the order of
// Of.
var Dirs = [4]string{"badges", "badges-uptime", "badges-latency", "badges-certificate"}

// Of returns the four badges of a server's file: status, 30-day
// uptime, latency, certificate.
func Of(f record.ServerFile) [4]Badge {
	return [4]Badge{StatusOf(f.Status), UptimeOf(f.Uptime.Month), LatencyOf(f.LatencyP50), CertificateOf(f.Certificate)}
}

// The certificate badge's colours: past the warning, within it, within
// its last days, expired.
const (
	CertColorValid   = "brightgreen"
	CertColorWarning = "yellow"
	CertColorLast    = "orange"
	CertColorExpired = "red"
)

// CertificateLabel is the left-hand text of the certificate badge.
const CertificateLabel = "certificate"

// CertificateOf returns badges-certificate/<id>.json: the
// certificate's message, "valid until 2027-03-01" (which changes only with
// the certificate), "expires in 9 days" within the warning, "failing: TLS:
// certificate has expired"; or "none seen" when no check saw one.
func CertificateOf(c *record.Certificate) Badge {
	b := Badge{SchemaVersion: 1, Label: CertificateLabel, Message: "none seen", Color: "lightgrey"}
	switch {
	case c == nil:
	case c.Expired:
		b.Message, b.Color = c.Message, CertColorExpired
	case c.DaysLeft != nil && *c.DaysLeft <= data.CertWarnDays[len(data.CertWarnDays)-1]:
		b.Message, b.Color = c.Message, CertColorLast
	case c.Warning:
		b.Message, b.Color = c.Message, CertColorWarning
	default:
		b.Message, b.Color = c.Message, CertColorValid
	}
	return b
}
