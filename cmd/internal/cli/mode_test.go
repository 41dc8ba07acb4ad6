package cli

import "testing"

// TestHasFlag: a flag in any of its forms, not a longer flag, not a value
// that only spells the name, nothing after "--".
func TestHasFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"-url", "x"}, true},
		{[]string{"--url=x"}, true},
		{[]string{"-lab", "-url=x"}, true},
		{[]string{"-data", "d"}, false},
		{[]string{"-urls"}, false},
		{[]string{"--", "-url"}, false},
		{[]string{"-data", "url"}, false},
	} {
		if got := HasFlag(tc.args, "url"); got != tc.want {
			t.Errorf("HasFlag(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
