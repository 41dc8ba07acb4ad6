package data

import (
	"encoding/json"
	"testing"
)

func TestOutcomeText(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Outcome
		wantErr bool
	}{
		{`{"s":"working"}`, Working, false},
		{`{"s":"paused"}`, Paused, false},
		{`{"s":""}`, "", false}, // a state never checked round-trips
		{`{"s":"up"}`, "", true},
	} {
		var v struct {
			S Outcome `json:"s"`
		}
		err := json.Unmarshal([]byte(tc.in), &v)
		if (err != nil) != tc.wantErr || v.S != tc.want {
			t.Errorf("unmarshal %s = %q, %v; want %q, error %v", tc.in, v.S, err, tc.want, tc.wantErr)
		}
	}
}

func TestLabels_O(t *testing.T) {
	want := map[Outcome]string{
		Working: "working", NeedsKey: "needs a key", Refused: "refused our check",
		NotCheckable: "not checkable by us", Failing: "failing",
		Paused: "checks paused at the owner's request", Pending: "not checked yet",
	}
	for _, o := range Outcomes {
		if o.Label() != want[o] {
			t.Errorf("%s label = %q, want %q", o, o.Label(), want[o])
		}
	}
	if len(Outcomes) != len(want) {
		t.Errorf("%d outcomes, want %d", len(Outcomes), len(want))
	}
	for o, answered := range map[Outcome]bool{Working: true, NeedsKey: true, Refused: false, Failing: false} {
		if o.Answered() != answered {
			t.Errorf("%s answered = %v", o, !answered)
		}
	}
}
