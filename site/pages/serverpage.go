package pages

import (
	"cmp"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"plug.directory/prober/data"
	"plug.directory/prober/site/record"
	"plug.directory/prober/site/strip"
)

// appendServerPage appends the page of p to b as server.html.tmpl
// writes it, byte for byte, written here rather than by the template
// engine: through it a page took some 0.6 ms of a minute's publish, most
// of it calls by reflection, a third of a minute with the pages
// (BenchmarkServerPage). Its values are escaped as html/template escapes
// text and quoted attributes (appendEscaped); a link whose bytes it
// would escape otherwise (pageWriter.path, pageWriter.link) leaves ok
// false, and the template writes that page. TestServerPageAsTheTemplate
// holds the two to the same bytes.
func appendServerPage(b []byte, p serverPage) (_ []byte, ok bool) {
	w := pageWriter{b: b, plain: true}
	w.head(p.Meta())
	w.raw(`<header><nav aria-label="Site"><a href="`)
	w.path(p.Up)
	w.raw(`index.html">Servers</a><a href="`)
	w.path(p.Up)
	w.raw(`checks.html">Our checks</a><a href="`)
	w.path(p.Up)
	w.path(p.Badges.Feed)
	w.raw(`">Atom feed of its status changes</a><a href="`)
	w.path(p.Base)
	w.raw(`.json">`)
	w.text(p.Base)
	w.raw(".json</a></nav></header>\n<main>\n<h1>")
	w.text(cmp.Or(p.Title(), p.ID))
	w.raw("</h1>\n")
	if p.Title() != "" {
		w.raw(`<p class="sub">`)
		w.text(p.ID)
		w.raw("</p>\n")
	}
	w.state(p)
	if r := p.LastResult; r != nil && r.ServerDescription != nil {
		w.raw(`<p class="about">`)
		w.text(*r.ServerDescription)
		w.raw("</p>\n")
	}
	if p.Status == data.NeedsKey {
		w.raw(`<p class="about">It counts as working: it is up and answers. To use it you need a key or an account from its provider; a client signs in (OAuth) or sends the key with each request.`)
		if r := p.LastResult; r != nil && r.KeyInfo != nil {
			w.raw(` The server says where to get one in <a href="`)
			w.link(*r.KeyInfo)
			w.raw(`" rel="nofollow">its OAuth metadata</a>, which names the service that issues its keys.`)
		}
		w.raw(" Our checks never sign in, so they do not see its tools.</p>\n")
	}
	if c := p.Certificate; c != nil {
		switch {
		case c.Expired:
			w.raw(`<p class="warn">Its certificate expired `)
			w.html(timeHTML(c.NotAfter))
			w.raw(": ")
			w.text(c.Message)
			w.raw(".</p>\n")
		case c.Warning:
			w.raw(`<p class="warn">Its certificate `)
			w.text(c.Message)
			w.raw(", ")
			w.html(timeHTML(c.NotAfter))
			w.raw(": once it has expired, every check fails (")
			w.text(p.CertExpired)
			w.raw(").</p>\n")
		}
	}
	w.facts(p)
	w.days(p)
	w.checks(p)
	w.changes(p)
	w.developers(p)
	w.badges(p)
	w.raw("</main>\n</body>\n</html>\n\n")
	if !w.plain {
		return b, false
	}
	return w.b, true
}

// pageWriter appends a page's bytes; plain turns false at a value the
// template would escape otherwise than appendEscaped does.
type pageWriter struct {
	b     []byte
	plain bool
}

// raw appends the page's own markup.
func (w *pageWriter) raw(s string) { w.b = append(w.b, s...) }

// text appends s escaped as html/template escapes text, an element's
// title and a quoted attribute's value.
func (w *pageWriter) text(s string) { w.b = appendEscaped(w.b, s) }

// html appends markup made by one of the template's functions.
func (w *pageWriter) html(h template.HTML) { w.b = append(w.b, h...) }

// num appends n in decimal.
func (w *pageWriter) num(n int) { w.b = strconv.AppendInt(w.b, int64(n), 10) }

// textOf appends what the template writes for a pointer: its value, or
// "<nil>" escaped.
func textOf[T any](w *pageWriter, v *T) {
	if v == nil {
		w.text(fmt.Sprint(v))
		return
	}
	w.text(fmt.Sprint(*v))
}

// around appends before, v and after, as {{with}} does, and reports
// whether it did: v is not nil.
func around[T any](w *pageWriter, before string, v *T, after string) bool {
	if v == nil {
		return false
	}
	w.raw(before)
	textOf(w, v)
	w.raw(after)
	return true
}

// path appends s, a piece of a link before its query (the way up, an
// id, a file's name): plain when every byte of it is one a ranked list
// lets an id have (idPlain), which html/template's URL filter and
// normalizer leave as they are.
func (w *pageWriter) path(s string) {
	if !idPlain(s) {
		w.plain = false
	}
	w.text(s)
}

// link appends u, a whole link a server gave (its website, where to
// get a key): plain when it is http or https and holds no byte
// html/template would escape or percent-encode there.
func (w *pageWriter) link(u string) {
	if !linkPlain(u) {
		w.plain = false
	}
	w.text(u)
}

// linkPlain reports whether u starts with http:// or https:// and holds
// only letters, digits and "-._~/:".
func linkPlain(u string) bool {
	return (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && onlyBytes(u, "-._~/:")
}

// when appends the template's "when": t, or "never".
func (w *pageWriter) when(t *record.Time) { w.html(whenHTML(t)) }

// head is base.html.tmpl's "head".
func (w *pageWriter) head(m pageMeta) {
	w.raw("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>")
	w.text(m.Title)
	w.raw("</title>\n<meta name=\"description\" content=\"")
	w.text(m.Description)
	w.raw("\">\n<link rel=\"icon\" href=\"data:,\">\n<link rel=\"stylesheet\" href=\"")
	w.path(m.Up)
	w.raw("site.css\">\n<script src=\"")
	w.path(m.Up)
	w.raw("site.js\" defer></script>\n</head>\n<body>\n")
}

// state is the page's first line: its status, and what the last check
// found.
func (w *pageWriter) state(p serverPage) {
	w.raw(`<p class="state"><span class="st `)
	w.text(string(p.Status))
	w.raw(`">`)
	w.text(p.Label)
	w.raw("</span> ")
	r := p.LastResult
	started := func(before, after string) {
		if r != nil {
			w.raw(before)
			w.html(timeHTML(r.Started))
			w.raw(after)
		}
	}
	switch p.Status {
	case data.Working:
		w.raw("It answered our last check")
		if r != nil {
			started(", ", ",")
			around(w, " in ", r.LatencyMS, " ms")
			w.raw(" and listed ")
			w.text(data.Plural(r.ToolCount, "tool"))
		}
		w.raw(".")
	case data.NeedsKey:
		w.raw("It answered our last check")
		started(", ", ",")
		w.raw(" and asks for a key or a sign-in before it lists its tools")
		if r != nil {
			around(w, " (HTTP ", r.HTTPStatus, ")")
		}
		w.raw(".")
	case data.Refused:
		w.raw("It refused our last check")
		started(", ", "")
		around(w, " (", p.Detail, ")")
		w.raw(". A server may limit automated checks: this does not count against it.")
	case data.NotCheckable:
		w.raw("Our checks cannot reach it: ")
		textOf(w, p.Detail)
		w.raw(". This does not count against it.")
	case data.Failing:
		w.raw("Our last check")
		started(", ", ",")
		w.raw(" failed: ")
		textOf(w, p.Detail)
		w.raw(".")
		if p.FailingSince != nil {
			w.raw(" Failing since ")
			w.when(p.FailingSince)
			w.raw(".")
		}
	case data.Paused:
		w.raw("Its owner asked us to stop checking it")
		if t := pausedSince(p.ServerFile); t != nil {
			w.raw(", and we have not since ")
			w.when(t)
		}
		w.raw(".")
	default:
		w.raw("Listed")
		if p.Listed != nil {
			w.raw(" ")
			w.when(p.Listed)
		}
		w.raw(", not checked yet")
		if p.NextCheck != nil {
			w.raw(": its first check is planned for ")
			w.when(p.NextCheck)
		}
		w.raw(".")
	}
	w.raw("</p>\n")
}

// facts is the page's first list: the server's address, website, tools,
// checks and listing.
func (w *pageWriter) facts(p serverPage) {
	w.raw("<dl class=\"facts\">\n<dt>Address</dt><dd>")
	if !around(w, "<code>", p.URL, "</code>") {
		w.raw("none: it only runs locally")
	}
	w.raw("</dd>\n")
	r := p.LastResult
	if r != nil && r.ServerWebsite != nil {
		w.raw(`<dt>Website</dt><dd><a href="`)
		w.link(*r.ServerWebsite)
		w.raw(`" rel="nofollow">`)
		w.text(*r.ServerWebsite)
		w.raw("</a></dd>\n")
	}
	w.raw("<dt>Tools</dt><dd>")
	switch {
	case r == nil:
		w.raw("unknown: not checked yet")
	case r.Status == data.Working:
		w.text(data.Plural(r.ToolCount, "tool"))
		for i, t := range r.Tools {
			if i > 0 {
				w.raw(",")
			} else {
				w.raw(":")
			}
			w.raw(" <code>")
			w.text(t)
			w.raw("</code>")
		}
	case r.Status == data.NeedsKey:
		w.raw("unknown: it shows them only to a client with a key")
	default:
		w.raw("unknown: the check did not list them")
	}
	w.raw("</dd>\n<dt>Last check</dt><dd>")
	switch {
	case p.LastCheck != nil:
		w.when(p.LastCheck)
	case p.Status == data.Paused:
		w.raw("none: paused before its first check")
	case p.Status == data.NotCheckable:
		w.raw("none: ")
		textOf(w, p.Detail)
	default:
		w.raw("not checked yet")
	}
	w.raw("</dd>\n")
	if p.LastCheck != nil {
		if !p.WorkedAtLastCheck() {
			w.raw("<dt>Last worked</dt><dd>")
			w.when(p.LastAnswered)
			w.raw("</dd>\n")
		}
		if a := p.Answered(); a != nil {
			if !a.Worked {
				w.raw("<dt>Last answered</dt><dd>")
				w.html(timeHTML(a.Started))
				around(w, ", in ", a.LatencyMS, " ms")
				around(w, ", HTTP ", a.HTTPStatus, "")
				w.raw("</dd>\n")
			}
		} else {
			w.raw("<dt>Last answered</dt><dd>")
			if p.AnswerOlder() {
				w.raw("not in its last ")
				w.num(len(p.History))
				w.raw(" checks")
			} else {
				w.raw("never: no check got an answer")
			}
			w.raw("</dd>\n")
		}
	}
	w.raw("<dt>Next check</dt><dd>")
	switch {
	case p.Status == data.Paused:
		w.raw("none while paused")
	case p.NextCheck != nil:
		w.when(p.NextCheck)
		if record.ValueOf(p.NextCheckFrom) == "estimate" {
			w.raw(" (estimated)")
		}
	case p.Status == data.NotCheckable:
		w.raw("none: no check can reach it (")
		textOf(w, p.Detail)
		w.raw(")")
	default:
		w.raw("not planned yet")
	}
	w.raw("</dd>\n<dt>How often</dt><dd>Rank ")
	w.num(p.Rank)
	if p.Status == data.Paused {
		w.raw("; not checked: checks paused at the owner's request (otherwise ")
		w.text(p.Tier)
		w.raw(")")
	} else {
		w.raw(", checked ")
		w.text(p.Tier)
		if p.EffectiveCad != 0 {
			w.raw("; its host's caps stretch that to every ")
			w.text(durationText(p.EffectiveCad))
		}
	}
	w.raw("</dd>\n")
	if p.Status == data.Paused {
		w.raw("<dt>Paused</dt><dd>")
		if t := pausedSince(p.ServerFile); t != nil {
			w.raw("since ")
			w.when(t)
			w.raw(", ")
		}
		w.raw("at the owner's request: no check will come until the owner asks again</dd>\n")
	}
	if p.Listed != nil {
		w.raw("<dt>Listed</dt><dd>")
		w.when(p.Listed)
		w.raw("</dd>\n")
	}
	if len(p.SharedWith) > 0 {
		w.raw("<dt>Same address as</dt><dd>")
		for i, id := range p.SharedWith {
			if i > 0 {
				w.raw(", ")
			}
			w.raw(`<a href="`)
			w.path(p.Up)
			w.raw("servers/")
			w.path(id)
			w.raw(`.html">`)
			w.text(id)
			w.raw("</a>")
		}
		w.raw(": one check serves all</dd>\n")
	}
	w.raw("</dl>\n")
}

// days is the strip of the last days, the uptimes, the runs of days some
// check failed and the latency chart.
func (w *pageWriter) days(p serverPage) {
	d := p.Daily
	w.raw("<h2>The last ")
	w.num(len(d))
	w.raw(" days</h2>\n<figure><img src=\"")
	w.path(p.Up)
	w.path(p.Badges.Strip)
	w.raw(`" width="`)
	w.num(stripWidth(d))
	w.raw(`" height="`)
	w.num(strip.FileHeight)
	w.raw(`" alt="`)
	w.text(strip.Summary(d))
	w.raw(": ")
	w.text(strip.DaysSummary(d))
	w.raw(`">`)
	if len(d) > 0 {
		w.raw(`<p class="ends"><span>`)
		w.text(d[0].Date)
		w.raw("</span><span>")
		w.text(d[len(d)-1].Date)
		if p.LastCheck != nil {
			w.raw(", the day of its last check")
		} else {
			w.raw(", the day of this page")
		}
		w.raw("</span></p>")
	}
	period := record.PeriodUptime(d)
	w.raw("\n<p>Uptime: 24 h ")
	w.text(uptimeText(p.Uptime.Day))
	w.raw("; 7 d ")
	w.text(uptimeText(p.Uptime.Week))
	w.raw("; 30 d ")
	w.text(uptimeText(p.Uptime.Month))
	w.raw("; ")
	w.num(len(d))
	w.raw(" d ")
	w.text(uptimeText(period))
	w.raw("</p>\n")
	if period.Answered == 0 {
		w.raw(`<p class="none">No check worked in these `)
		w.num(len(d))
		w.raw(" days")
		if period.Counted == 0 {
			w.raw(": nothing counted")
		}
		w.raw(".</p>\n")
	}
	w.raw("<figcaption>Uptime per UTC day, oldest on the left: green every check worked, yellow some failed, red most failed, grey outline nothing counted, faint dashes before it was listed. A check that needed a key worked; one it refused, or that could not reach it, does not count.</figcaption></figure>\n")
	if all := strip.BadDays(d); len(all) > 0 {
		runs := recentBadDays(all)
		if len(runs) < len(all) {
			w.raw("<p>The days some check failed, the last ")
			w.num(len(runs))
			w.raw(" of ")
			w.num(len(all))
			w.raw(` runs: its file (<a href="`)
			w.path(p.Base)
			w.raw(`.json">`)
			w.text(p.Base)
			w.raw(".json</a>) has every day.</p>\n")
		}
		w.raw("<table>\n<caption>The days some check failed</caption>\n<thead><tr><th scope=\"col\">Days</th><th scope=\"col\">Checks</th><th scope=\"col\">Uptime</th></tr></thead>\n<tbody>\n")
		for _, r := range runs {
			w.raw("<tr><td>")
			w.text(r.From)
			if r.Days > 1 {
				w.raw(" to ")
				w.text(r.To)
				w.raw(" (")
				w.num(r.Days)
				w.raw(" days)")
			}
			w.raw(`</td><td data-label="Checks">`)
			w.text(data.Plural(r.Counted, "counted check"))
			w.raw(", ")
			w.num(r.Answered)
			w.raw(` worked</td><td data-label="Uptime">`)
			w.text(r.Percent())
			w.raw(" %</td></tr>\n")
		}
		w.raw("</tbody>\n</table>\n")
	}
	w.raw("<figure>")
	w.html(strip.LatencyChart(d))
	w.raw("<figcaption>Time to answer per UTC day (")
	if !around(w, "median ", p.LatencyP50, " ms over 30 days") {
		w.raw("no check worked in 30 days")
	}
	w.raw(`): the median of the checks that worked, split by phase, bottom up, <span class="sw dns"></span> DNS, <span class="sw connect"></span> TCP connect, <span class="sw tls"></span> TLS handshake, <span class="sw wait"></span> waiting for the server's answers, <span class="sw rest"></span> the rest (reading the answers); the tick above each bar is the 95th percentile of the whole check.</figcaption></figure>` + "\n")
}

// checks is the table of the latest checks.
func (w *pageWriter) checks(p serverPage) {
	recent := recentChecks(p.History)
	w.raw("<h2>")
	switch len(recent) {
	case 0:
		w.raw("Checks")
	case 1:
		w.raw("The last check")
	default:
		w.raw("The last ")
		w.num(len(recent))
		w.raw(" checks")
	}
	w.raw("</h2>\n")
	if len(recent) == 0 {
		w.raw("<p>")
		if p.Status == data.Paused {
			w.raw("No check recorded: checks paused at the owner's request.")
		} else {
			w.raw("Not checked yet.")
		}
		w.raw("</p>\n")
		return
	}
	if len(recent) < len(p.History) {
		w.raw(`<p>Its file (<a href="`)
		w.path(p.Base)
		w.raw(`.json">`)
		w.text(p.Base)
		w.raw(".json</a>) lists the last ")
		w.num(len(p.History))
		w.raw(".</p>\n")
	}
	w.raw("<table>\n<thead><tr><th scope=\"col\">Started</th><th scope=\"col\">Outcome</th><th scope=\"col\">Time taken</th></tr></thead>\n<tbody>\n")
	for _, c := range recent {
		w.raw("<tr><td>")
		w.html(timeHTML(c.Started))
		w.raw(`</td><td><span class="st `)
		w.text(string(c.Status))
		w.raw(`">`)
		w.text(c.Status.Label())
		w.raw("</span>")
		if c.Detail != "" {
			w.raw(": ")
			w.text(c.Detail)
		}
		w.raw(`</td><td data-label="Time taken">`)
		if !around(w, "", c.LatencyMS, " ms") {
			w.raw("no answer")
		}
		w.raw("</td></tr>\n")
	}
	w.raw("</tbody>\n</table>\n")
}

// changes is the table of the latest status changes.
func (w *pageWriter) changes(p serverPage) {
	w.raw("<h2>Status changes</h2>\n")
	in := p.Incidents
	changes := recentChanges(in)
	if len(changes) == 0 {
		w.raw("<p>None yet: ")
		if p.Status == data.Pending {
			w.raw("not checked yet")
		} else {
			w.raw("no check recorded")
		}
		w.raw(".</p>\n")
		return
	}
	if len(changes) < len(in) {
		w.raw("<p>The last ")
		w.num(len(changes))
		w.raw(" of ")
		w.num(len(in))
		w.raw(`: its file (<a href="`)
		w.path(p.Base)
		w.raw(`.json">`)
		w.text(p.Base)
		w.raw(`.json</a>) lists them all, its <a href="`)
		w.path(p.Up)
		w.path(p.Badges.Feed)
		w.raw("\">Atom feed</a> the latest. Each lasted until the one above it started.</p>\n")
	}
	w.raw("<table>\n<thead><tr><th scope=\"col\">Status</th><th scope=\"col\">Reason</th><th scope=\"col\">From</th><th scope=\"col\">Lasted</th></tr></thead>\n<tbody>\n")
	for _, c := range changes {
		w.raw(`<tr><td><span class="st `)
		w.text(string(c.Status))
		w.raw(`">`)
		w.text(c.Label)
		w.raw(`</span></td><td data-label="Reason">`)
		if !around(w, "", c.Detail, "") {
			w.raw("none given")
		}
		w.raw(`</td><td data-label="From">`)
		w.html(timeHTML(c.Start))
		w.raw(`</td><td data-label="Lasted">`)
		w.text(secondsText(c.DurationSeconds))
		w.raw("</td></tr>\n")
	}
	w.raw("</tbody>\n</table>\n")
}

// developers is the list for developers: protocol, server, last check,
// tool problems, certificate, tool definitions and their changes.
func (w *pageWriter) developers(p serverPage) {
	w.raw("<h2>For developers</h2>\n<dl class=\"facts\">\n<dt>Protocol</dt><dd>")
	if pr := p.Protocol; pr != nil {
		w.text(pr.Version)
		w.raw(" (")
		w.text(pr.Era)
		w.raw(") over ")
		w.text(pr.Transport)
		if pr.Speaks20260728 {
			w.raw("; speaks 2026-07-28; ")
		} else {
			w.raw("; does not speak 2026-07-28; ")
		}
		w.text(pr.SessionText())
		w.raw("; ")
		w.text(pr.AnswersText())
		w.raw("; ")
		if len(pr.DiscoverVersions) > 0 {
			w.raw("server/discover lists ")
			w.codes(pr.DiscoverVersions, ", ")
		} else {
			w.raw("no server/discover listing")
		}
		w.raw("; seen by the check of ")
		w.html(timeHTML(pr.SeenAt))
	} else {
		w.raw("unknown: no check got through a handshake")
	}
	w.raw("</dd>\n")
	if r := p.LastResult; r != nil {
		w.raw("<dt>Server</dt><dd>")
		if around(w, "calls itself <code>", r.ServerName, "</code>") {
			around(w, ", version ", r.ServerVersion, "")
		} else {
			w.raw("unknown: it did not say")
		}
		w.raw("</dd>\n<dt>Last check</dt><dd>")
		w.html(timeHTML(r.Started))
		w.raw(": ")
		w.text(r.Label)
		around(w, " (", r.Detail, ")")
		w.raw("; ")
		if !around(w, "took ", r.LatencyMS, " ms") {
			w.raw("no answer")
		}
		around(w, ", HTTP ", r.HTTPStatus, "")
		if t := r.Timings; t != nil {
			w.raw("; DNS ")
			w.text(msText(t.DNSMS))
			w.raw(", TCP connect ")
			w.text(msText(t.ConnectMS))
			w.raw(", TLS handshake ")
			w.text(msText(t.TLSMS))
			w.raw(", waiting for the server ")
			w.text(msText(t.WaitMS))
			if len(t.FirstByteMS) > 0 {
				w.raw(" (first byte of each answer: ")
				for i, v := range t.FirstByteMS {
					if i > 0 {
						w.raw(", ")
					}
					w.b = strconv.AppendInt(w.b, v, 10)
				}
				w.raw(" ms)")
			}
			w.raw("; ")
			w.b = strconv.AppendInt(w.b, t.TotalMS, 10)
			w.raw(" ms in all")
		}
		w.raw("</dd>\n")
		if len(r.ToolProblems) > 0 {
			w.raw(`<dt>Tool problems</dt><dd><p class="warn">`)
			w.text(data.Plural(len(r.ToolProblems), "problem"))
			w.raw(" that clients reject or mishandle (advice: the server is still working):</p><ul>")
			for _, tp := range r.ToolProblems {
				w.raw("<li><code>")
				w.text(tp.Tool)
				w.raw("</code> (")
				w.text(tp.Rule)
				w.raw("): ")
				w.text(tp.Message)
				w.raw("</li>")
			}
			w.raw("</ul></dd>\n")
		}
	}
	w.raw("<dt>Certificate</dt><dd>")
	if c := p.Certificate; c != nil {
		w.raw("<span")
		if c.Warning {
			w.raw(` class="warn"`)
		}
		w.raw(">")
		w.text(c.Message)
		w.raw("</span> (")
		w.html(timeHTML(c.NotAfter))
		w.raw(")")
		around(w, " over ", c.TLSVersion, "")
		w.raw("; issued by ")
		w.text(c.Issuer)
		w.raw(" for ")
		w.codesOr(c.Names, "no name")
		w.raw("; seen by the check of ")
		w.html(timeHTML(c.SeenAt))
	} else {
		w.raw("none seen: no check got as far as a TLS handshake")
	}
	w.raw("</dd>\n<dt>Tool definitions</dt><dd>")
	if td := p.ToolDefs; td.Hash != nil {
		w.raw("fingerprint <code>")
		textOf(w, td.Hash)
		w.raw("</code>, last listed ")
		w.when(td.Seen)
		w.raw("; ")
		if td.ChangedAt != nil {
			w.raw("last changed ")
			w.when(td.ChangedAt)
		} else {
			w.raw("unchanged since checks first listed them")
		}
	} else {
		w.raw("no fingerprint yet: no check has recorded the definitions of its tools")
	}
	w.raw("</dd>\n</dl>\n")
	if ch := p.ToolDefs.Changes; len(ch) > 0 {
		w.raw("<h3>Changes of its tool definitions</h3>\n<table>\n<thead><tr><th scope=\"col\">Changed</th><th scope=\"col\">Added</th><th scope=\"col\">Removed</th><th scope=\"col\">Changed definitions</th></tr></thead>\n<tbody>\n")
		for _, c := range ch {
			w.raw("<tr><td>")
			w.html(timeHTML(c.At))
			w.raw("</td>")
			if c.Details {
				w.raw(`<td data-label="Added">`)
				w.codesOr(c.Added, "none")
				w.raw(`</td><td data-label="Removed">`)
				w.codesOr(c.Removed, "none")
				w.raw(`</td><td data-label="Changed">`)
				for i, f := range c.Changed {
					if i > 0 {
						w.raw("; ")
					}
					w.raw("<code>")
					w.text(f.Name)
					w.raw("</code>: ")
					for j, name := range f.Fields {
						if j > 0 {
							w.raw(", ")
						}
						w.text(name)
					}
				}
				if len(c.Changed) == 0 {
					w.raw("none")
				}
				w.raw("</td>")
			} else {
				w.raw(`<td colspan="3">the definitions changed; the sets were not both kept, so what changed is unknown</td>`)
			}
			w.raw("</tr>\n")
		}
		w.raw("</tbody>\n</table>\n")
	}
}

// codes appends each of ss as code, sep between them.
func (w *pageWriter) codes(ss []string, sep string) {
	for i, s := range ss {
		if i > 0 {
			w.raw(sep)
		}
		w.raw("<code>")
		w.text(s)
		w.raw("</code>")
	}
}

// codesOr appends ss as code, or none when there is none.
func (w *pageWriter) codesOr(ss []string, none string) {
	if len(ss) == 0 {
		w.raw(none)
		return
	}
	w.codes(ss, ", ")
}

// badges is the page's last part: its badges and strip to paste.
func (w *pageWriter) badges(p serverPage) {
	w.raw("<h2>Badges for your README</h2>\n<p>Status, 30-day uptime, latency and certificate, as <a href=\"https://shields.io/badges/endpoint-badge\">shields.io endpoint badges</a>: paste this into the README of ")
	w.text(p.ID)
	w.raw(".</p>\n<pre><code>")
	w.text(p.Badges.Markdown)
	w.raw("</code></pre>\n<p>The strip of its last ")
	w.num(len(p.Daily))
	w.raw(` days above, an SVG that stands alone (<a href="`)
	w.path(p.Up)
	w.path(p.Badges.Strip)
	w.raw(`">`)
	w.text(p.Badges.Strip)
	w.raw("</a>), in Markdown or in HTML:</p>\n<pre><code>")
	w.text(p.Badges.StripMarkdown)
	w.raw("</code></pre>\n<pre><code>")
	w.text(p.Badges.StripHTML)
	w.raw("</code></pre>\n")
}
