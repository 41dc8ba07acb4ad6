package data

import (
	"slices"
	"unicode/utf8"
)

// The bounds of a recorded result: whatever a server answers, its journal
// line stays well under MaxJournalLine, so one hostile answer cannot make a
// minute's journal unreadable, nor its Parquet part or its
// server's page grow with it. Lengths are counted as the JSON encoding
// writes them (a '<' takes 6 bytes, \u003c), so the bound holds on what is
// written, not only on what was received. Every text and list a result
// carries has a bound of its own, and the bounds add up to less than
// MaxRecordedBytes (TestResultBoundEveryField walks the type: a field added
// without a bound fails it).
const (
	// MaxRecordedBytes bounds the JSON encoding of one bounded result.
	MaxRecordedBytes = 96 << 10
	// MaxNameBytes bounds the encoding of each short text of a result:
	// server name and version, protocol, transport, host, reason, status,
	// tools hash, a tool problem's rule.
	MaxNameBytes = 512
	// MaxDetailBytes bounds the encoding of a result's Detail.
	MaxDetailBytes = 1024
	// MaxToolNameBytes bounds the encoding of one tool name, in the names
	// kept and in a tool problem.
	MaxToolNameBytes = 256
	// MaxToolNames is the most tool names a result keeps; ToolCount stays
	// the exact count.
	MaxToolNames = 512
	// MaxToolNamesBytes bounds the encoding of all the tool names kept.
	MaxToolNamesBytes = 32 << 10
	// MaxToolProblemBytes bounds the encoding of a tool problem's message.
	MaxToolProblemBytes = 512
	// MaxToolProblemsBytes bounds the encoding of all the tool problems
	// kept (at most MaxToolProblems of them).
	MaxToolProblemsBytes = 16 << 10
	// TruncatedMarker ends a text that was cut to its bound.
	TruncatedMarker = "…(truncated)"
)

// Bound cuts r to the bounds above, in place: each text longer than its
// bound is cut at a character boundary and ends with TruncatedMarker, tool
// names beyond MaxToolNames or MaxToolNamesBytes are left out (ToolCount
// keeps the exact count), and so are tool problems beyond MaxToolProblems
// or MaxToolProblemsBytes, and a link a server gave of itself that is not a
// WebLink. The encoding of a bounded result is at
// most MaxRecordedBytes. Bounding a bounded result changes nothing.
func (r *Result) Bound() {
	for _, f := range []struct {
		s   *string
		max int
	}{
		{&r.ID, MaxIDBytes * 6}, {&r.URL, MaxAddressBytes * 6}, {&r.Host, MaxNameBytes}, {&r.Reason, MaxNameBytes},
		{&r.Detail, MaxDetailBytes}, {&r.Protocol, MaxNameBytes}, {&r.Transport, MaxNameBytes},
		{&r.ServerName, MaxNameBytes}, {&r.ServerVersion, MaxNameBytes}, {&r.ProberVersion, MaxNameBytes},
		{&r.ToolsHash, MaxNameBytes}, {&r.ServerTitle, MaxNameBytes}, {&r.ServerDescription, MaxDetailBytes},
	} {
		*f.s = truncateJSON(*f.s, f.max)
	}
	r.Status = Outcome(truncateJSON(string(r.Status), MaxNameBytes))
	// A link cut short leads elsewhere: one out of bounds is left out.
	r.ServerWebsite, r.KeyInfo = WebLink(r.ServerWebsite), WebLink(r.KeyInfo)
	if r.ToolCount < len(r.Tools) {
		r.ToolCount = len(r.Tools)
	}
	r.Tools = boundNames(r.Tools, MaxToolNameBytes, MaxToolNames, MaxToolNamesBytes)
	r.ToolProblems = boundProblems(r.ToolProblems)
	if t := r.TLS; t != nil {
		b := *t // a copy: r.TLS may be the caller's
		b.Version, b.Issuer = truncateJSON(b.Version, MaxNameBytes), truncateJSON(b.Issuer, MaxNameBytes)
		b.Names = boundNames(b.Names, maxCertNameBytes, MaxCertNames, MaxCertNamesBytes)
		r.TLS = &b
	}
	if p := r.Support; p != nil {
		b := *p
		b.Versions = boundNames(b.Versions, maxVersionBytes, MaxDiscoverVersions, maxDiscoverVersionsBytes)
		b.Answers = truncateJSON(b.Answers, MaxNameBytes)
		r.Support = &b
	}
	if t := r.Timings; t != nil && len(t.FirstByte) > MaxFirstBytes {
		b := *t
		b.FirstByte = b.FirstByte[:MaxFirstBytes:MaxFirstBytes]
		r.Timings = &b
	}
}

// boundNames returns names each cut to maxEach, without those past maxCount
// or past maxTotal bytes of encoding: names itself when nothing is cut, else
// a copy (names may be the caller's).
func boundNames(names []string, maxEach, maxCount, maxTotal int) []string {
	total := 0
	var kept []string
	for i, name := range names {
		cut := truncateJSON(name, maxEach)
		n := jsonLen(cut) + 3 // quotes and comma
		if i >= maxCount || total+n > maxTotal {
			if kept == nil {
				kept = slices.Clone(names[:i])
			}
			break
		}
		total += n
		if cut != name && kept == nil {
			kept = slices.Clone(names[:i])
		}
		if kept != nil {
			kept = append(kept, cut)
		}
	}
	if kept != nil {
		return kept
	}
	return names
}

// boundProblems returns a copy of problems each cut to its bounds, without
// those past MaxToolProblems or past MaxToolProblemsBytes of encoding. A
// last problem of rule ToolRuleBudget, the lint's note of what its budget
// left unchecked, is kept last whatever is cut before it. A tool named with
// 100 KB of '<' gives problems that each carry its name: before they were
// bounded, three of them made a journal line of 1.8 MB, past the reader's
// limit, and the result was never folded.
func boundProblems(problems []ToolProblem) []ToolProblem {
	if len(problems) == 0 {
		return problems
	}
	body, note := problems, []ToolProblem(nil)
	if last := problems[len(problems)-1]; last.Rule == ToolRuleBudget {
		body, note = problems[:len(problems)-1], []ToolProblem{cutProblem(last)}
	}
	count, room := MaxToolProblems-len(note), MaxToolProblemsBytes
	for _, p := range note {
		room -= problemLen(p)
	}
	kept := make([]ToolProblem, 0, min(len(body), count)+len(note))
	for _, p := range body {
		c := cutProblem(p)
		n := problemLen(c)
		if len(kept) == count || n > room {
			break
		}
		room -= n
		kept = append(kept, c)
	}
	return append(kept, note...)
}

// cutProblem returns p with its texts cut to their bounds.
func cutProblem(p ToolProblem) ToolProblem {
	return ToolProblem{Tool: truncateJSON(p.Tool, MaxToolNameBytes), Rule: truncateJSON(p.Rule, MaxNameBytes),
		Message: truncateJSON(p.Message, MaxToolProblemBytes)}
}

// problemLen returns the length of p's JSON encoding in a list.
func problemLen(p ToolProblem) int {
	return jsonLen(p.Tool) + jsonLen(p.Rule) + jsonLen(p.Message) + len(`{"tool":"","rule":"","message":""},`)
}

// truncateJSON returns s when its JSON encoding takes at most max bytes,
// else its longest prefix (whole characters) that, with TruncatedMarker,
// does.
func truncateJSON(s string, max int) string {
	if len(s) <= max/6 || jsonLen(s) <= max {
		return s // every byte encodes in at most 6
	}
	room := max - jsonLen(TruncatedMarker)
	n := 0
	cut := 0
	for i, c := range s {
		w := jsonRuneLen(c, s[i:])
		if n+w > room {
			break
		}
		n += w
		cut = i + utf8.RuneLen(c)
		if c == utf8.RuneError {
			cut = i + 1
		}
	}
	return s[:cut] + TruncatedMarker
}

// jsonLen returns the length of s as encoding/json writes it inside quotes
// (HTML characters escaped, invalid UTF-8 as \ufffd), or a little more:
// control characters other than \n, \r and \t are counted as \u00XX.
func jsonLen(s string) int {
	n := 0
	for i, c := range s {
		n += jsonRuneLen(c, s[i:])
	}
	return n
}

// jsonRuneLen returns the encoded length of the character c starting rest.
func jsonRuneLen(c rune, rest string) int {
	switch {
	case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
		return 2
	case c < 0x20 || c == '<' || c == '>' || c == '&' || c == '\u2028' || c == '\u2029':
		return 6
	case c == utf8.RuneError:
		if _, w := utf8.DecodeRuneInString(rest); w == 1 {
			return 6 // invalid byte: \ufffd
		}
		return 3
	}
	return utf8.RuneLen(c)
}

// The bounds of a row of the ranked list: every id and address planned
// fits in a plan line any reader takes.
const (
	// MaxAddressBytes is the longest address checked (the limit browsers and
	// CDNs commonly keep); a longer one is listed as not checkable,
	// DetailAddressTooLong.
	MaxAddressBytes = 2048
	// MaxIDBytes is the longest server id; a row with a longer one is set
	// aside.
	MaxIDBytes = 256
	// MaxIDSegmentBytes is the longest part of an id between slashes: each
	// names a file or directory of the site, whose temporary name adds
	// some 30 bytes to it, and a file name takes at most 255.
	MaxIDSegmentBytes = 200
)

// PublishedSuffixes are the endings of the names of the files the site
// writes for a server (servers/<id>.json, servers/<id>.html,
// feeds/<id>.atom, badges-strip/<id>.svg, and in its own record
// older/<id>.bin) and a few it may, and ".older", which the record of a
// server that left the list adds before ".json" or ".bin"
// (<id>.older.json): no part of an id ends in one, in any case, or its
// directory could be another server's file ("a" and "a.json/b"), or its
// record another's ("a" and "a.older").
var PublishedSuffixes = []string{".json", ".html", ".atom", ".svg", ".xml", ".txt", ".bin", ".older"}
