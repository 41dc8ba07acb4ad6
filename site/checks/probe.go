// Package checks is the checks page: its facts taken from the constants
// the code enforces (Probe, Facts: probe.json, rule P2), their words
// (number, Grouped, span, per...), and the page's text rendered from them
// by checks.txt.tmpl (Text), split into blocks for its HTML form (Blocks).
package checks

import (
	"fmt"
	"strings"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
)

// Probe is probe.json: the facts of the checks page, taken from the constants
// the code enforces (rule P2). The checks page is rendered from it, so the
// page cannot say anything the code does not do. Durations are whole seconds.
type Probe struct {
	Version         string        `json:"version"`           // this build's version
	UserAgent       string        `json:"user_agent"`        // exact User-Agent of this build (N1)
	UserAgentFormat string        `json:"user_agent_format"` // with "<version>" in place of the version
	ProbeURL        string        `json:"probe_url"`         // the page the User-Agent points to
	SourceAddresses []string      `json:"source_addresses"`  // addresses checks leave from (N11)
	Tiers           []TierFact    `json:"tiers"`             // usual paces by rank (S1)
	HostCaps        HostCapFacts  `json:"host_caps"`         // per-host limits (S3)
	NewServers      NewFacts      `json:"new_servers"`       // first checks (S5)
	Retry           RetryFacts    `json:"retry"`             // repeats after a failure (S6)
	Calls           CallFacts     `json:"calls"`             // what a check sends (N2-N4)
	Limits          LimitFacts    `json:"limits"`            // N7-N10
	PauseWithinSecs int64         `json:"pause_within_seconds"`
	Contact         string        `json:"contact"`  // the operator's e-mail address, to which an owner writes to stop the checks (Config.Contact)
	Outcomes        []OutcomeFact `json:"outcomes"` // table O
}

// TierFact is one tier of rule S1. MaxRank is 0 for the tier of every other
// server.
type TierFact struct {
	Name           string `json:"name"`
	MaxRank        int    `json:"max_rank,omitempty"`
	CadenceSeconds int64  `json:"cadence_seconds"`
}

// HostCapFacts are the caps of rule S3.
type HostCapFacts struct {
	MinSpacingSeconds     int64 `json:"min_spacing_seconds"`
	MaxPerHour            int   `json:"max_per_hour"`
	AverageSpacingSeconds int64 `json:"average_spacing_seconds"` // 3600 / MaxPerHour
	MaxPerDay             int   `json:"max_per_day"`
}

// NewFacts are the promises of rule S5.
type NewFacts struct {
	TargetSeconds  int64 `json:"target_seconds"`
	SpacingSeconds int64 `json:"spacing_seconds"`
}

// RetryFacts are the promises of rule S6.
type RetryFacts struct {
	AfterFailureSeconds int64 `json:"after_failure_seconds"`
	WindowSeconds       int64 `json:"window_seconds"`
}

// CallFacts say what a check sends (rules N2-N4).
type CallFacts struct {
	RPCMethods   []string `json:"rpc_methods"`
	HTTPMethods  []string `json:"http_methods"`
	DiscoverFrom string   `json:"discover_from"` // first protocol version asked server/discover
}

// LimitFacts are the limits of rules N7-N10.
type LimitFacts struct {
	Ports               []int `json:"ports"`
	MaxRedirects        int   `json:"max_redirects"`
	MaxAnswerBytes      int   `json:"max_answer_bytes"`
	CheckTimeoutSeconds int64 `json:"check_timeout_seconds"`
}

// OutcomeFact is one row of table O.
type OutcomeFact struct {
	Status        data.Outcome `json:"status"`
	Label         string       `json:"label"`
	Answered      bool         `json:"answered"`
	CountsAgainst bool         `json:"counts_against"`
}

// Facts returns the facts of the checks page from the constants of
// package data, this build's version and the operator's contact address
// (Config.Contact).
func Facts(contact string) Probe {
	p := Probe{
		Version:         data.Version(),
		UserAgent:       data.UserAgent(),
		UserAgentFormat: fmt.Sprintf(data.UserAgentFormat, "<version>"),
		ProbeURL:        data.ProbeURL,
		SourceAddresses: []string{data.DefaultSourceAddr},
		Tiers: []TierFact{
			{Name: "hourly", MaxRank: data.HourlyTierMaxRank, CadenceSeconds: record.Secs(data.HourlyCadence)},
			{Name: "daily", CadenceSeconds: record.Secs(data.DailyCadence)},
		},
		HostCaps: HostCapFacts{
			MinSpacingSeconds:     record.Secs(data.HostMinSpacing),
			MaxPerHour:            data.HostMaxPerHour,
			AverageSpacingSeconds: record.Secs(time.Hour / data.HostMaxPerHour),
			MaxPerDay:             data.HostMaxPerDay,
		},
		NewServers: NewFacts{TargetSeconds: record.Secs(data.NewServerTarget), SpacingSeconds: record.Secs(data.NewServerSpacing)},
		Retry:      RetryFacts{AfterFailureSeconds: record.Secs(data.RetryAfterFailure), WindowSeconds: record.Secs(data.RetryWindow)},
		Calls: CallFacts{
			RPCMethods:   append([]string(nil), data.AllowedRPCMethods...),
			HTTPMethods:  append([]string(nil), data.AllowedMethods...),
			DiscoverFrom: data.DiscoverProtocolVersion,
		},
		Limits: LimitFacts{
			MaxRedirects:        data.MaxRedirects,
			MaxAnswerBytes:      data.MaxAnswerBytes,
			CheckTimeoutSeconds: record.Secs(data.CheckTimeout),
		},
		PauseWithinSecs: record.Secs(data.PauseWithin),
		Contact:         contact,
	}
	for _, port := range data.AllowedPorts {
		p.Limits.Ports = append(p.Limits.Ports, int(port))
	}
	for _, o := range data.Outcomes {
		p.Outcomes = append(p.Outcomes, OutcomeFact{Status: o, Label: o.Label(), Answered: o.Answered(), CountsAgainst: o.CountsAgainst()})
	}
	return p
}

// label returns the words of table O for the outcome code, as the facts
// state them.
func (p Probe) label(code string) (string, error) {
	for _, o := range p.Outcomes {
		if string(o.Status) == code {
			return o.Label, nil
		}
	}
	return "", fmt.Errorf("no outcome %q in the facts", code)
}

var smallNumbers = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// number writes n as the page does: in words below ten, else in digits
// with thousands separated by commas.
func number(n int64) string {
	if n >= 0 && n < int64(len(smallNumbers)) {
		return smallNumbers[n]
	}
	return Grouped(n)
}

// Grouped writes n in digits with thousands separated by commas: 3,000.
func Grouped(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// unitOf returns the largest of hours, minutes and seconds that divides
// seconds, and how many of it there are.
func unitOf(seconds int64) (n int64, unit string) {
	switch {
	case seconds != 0 && seconds%3600 == 0:
		return seconds / 3600, "hour"
	case seconds != 0 && seconds%60 == 0:
		return seconds / 60, "minute"
	default:
		return seconds, "second"
	}
}

// span writes a length of time as the page does: "five minutes",
// "30 seconds", "24 hours", "one hour".
func span(seconds int64) string {
	n, unit := unitOf(seconds)
	if n != 1 {
		unit += "s"
	}
	return number(n) + " " + unit
}

// firstSpan writes the length of "the first hour": a single unit goes
// without its number.
func firstSpan(seconds int64) string {
	if n, unit := unitOf(seconds); n == 1 {
		return unit
	}
	return span(seconds)
}

// per writes how often something happens after "once": "a day", "an hour",
// "a second", else "every two hours".
func per(seconds int64) string {
	if seconds == record.Secs(24*time.Hour) {
		return "a day"
	}
	switch n, unit := unitOf(seconds); {
	case n == 1 && unit == "hour":
		return "an hour"
	case n == 1:
		return "a " + unit
	}
	return "every " + span(seconds)
}

// bytesSize writes a byte count as the page does: "1 MB".
func bytesSize(n int) string {
	switch {
	case n%(1<<20) == 0:
		return Grouped(int64(n>>20)) + " MB"
	case n%(1<<10) == 0:
		return Grouped(int64(n>>10)) + " kB"
	}
	return Grouped(int64(n)) + " bytes"
}

// andList joins items as the page does: "443 and 8443", "a, b and c".
func andList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
