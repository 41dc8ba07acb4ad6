package data

import "fmt"

// Outcome is the code of table O of the checks page: what one check concluded,
// or what the site shows for a server that was not checked.
type Outcome string

// The outcomes of table O. The first five are concluded by a check; Paused and
// Pending are only ever shown by the site.
const (
	Working      Outcome = "working"
	NeedsKey     Outcome = "needs_key"
	Refused      Outcome = "refused"
	NotCheckable Outcome = "not_checkable"
	Failing      Outcome = "failing"
	Paused       Outcome = "paused"
	Pending      Outcome = "pending"
)

// Outcomes lists every outcome in the order the site shows them.
var Outcomes = []Outcome{Working, NeedsKey, Refused, NotCheckable, Failing, Paused, Pending}

var labels = map[Outcome]string{
	Working:      "working",
	NeedsKey:     "needs a key",
	Refused:      "refused our check",
	NotCheckable: "not checkable by us",
	Failing:      "failing",
	Paused:       "checks paused at the owner's request",
	Pending:      "not checked yet",
}

// Label returns the exact words the site shows for o (table O), or "" for an
// unknown outcome.
func (o Outcome) Label() string { return labels[o] }

// Valid reports whether o is one of the outcomes of table O.
func (o Outcome) Valid() bool { _, ok := labels[o]; return ok }

// Answered reports whether the server answered the check: working or needs_key.
func (o Outcome) Answered() bool { return o == Working || o == NeedsKey }

// CountsAgainst reports whether o counts against the server in uptime: only
// failing does (table O).
func (o Outcome) CountsAgainst() bool { return o == Failing }

// UnmarshalText accepts only the codes of table O and "" (no outcome yet,
// the zero value, as in the state of a server never checked), so a corrupt
// state or journal line is an error rather than a silent new status.
func (o *Outcome) UnmarshalText(b []byte) error {
	v := Outcome(b)
	if v != "" && !v.Valid() {
		return fmt.Errorf("unknown outcome %q", b)
	}
	*o = v
	return nil
}
