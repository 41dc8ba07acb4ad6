package pause

import (
	"fmt"
	"testing"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		err  bool
	}{
		{in: "github:o/r/paused.txt", want: Spec{Owner: "o", Repo: "r", Path: "paused.txt"}},
		{in: "github:o/r/dir/sub/paused.txt@main", want: Spec{Owner: "o", Repo: "r", Path: "dir/sub/paused.txt", Ref: "main"}},
		{in: "github:o/r/paused.txt@release/v2", want: Spec{Owner: "o", Repo: "r", Path: "paused.txt", Ref: "release/v2"}},
		{in: "github:o/r/a@b/paused.txt@main", want: Spec{Owner: "o", Repo: "r", Path: "a@b/paused.txt", Ref: "main"}},
		{in: "github:o/r/paused.txt@", err: true},
		{in: "github:o/r", err: true},
		{in: "github:o//paused.txt", err: true},
		{in: "github:o/r/../etc/passwd", err: true},
		{in: "github:o/r/a//b", err: true},
		{in: "paused.txt", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("ParseSpec = %+v, %v; want %+v, error %t", got, err, tc.want, tc.err)
			}
			if err == nil && got.String() != tc.in {
				t.Errorf("String() = %s, want the input back", got.String())
			}
		})
	}
}

func ExampleParseSpec() {
	for _, source := range []string{"github:plugdir/directory/paused.txt@main", "paused.txt"} {
		if !IsSpec(source) {
			fmt.Println(source, "is a local file")
			continue
		}
		s, err := ParseSpec(source)
		fmt.Println(s.Owner, s.Repo, s.Path, s.Ref, err)
	}
	// Output:
	// plugdir directory paused.txt main <nil>
	// paused.txt is a local file
}

func ExampleVerdict_String() {
	v := Verdict{Number: 7, Path: "paused.txt"}
	v.judge([]byte("alpha\n"), []byte("alpha\nhttps://shared.example/mcp  # owner asked\nzeta\n"), testServers)
	fmt.Print(v)
	// Output:
	// pull request #7 changing paused.txt: not acceptable
	// problem: paused.txt:3: "zeta" names no listed server
	// + paused.txt:2: https://shared.example/mcp  # owner asked  (pauses beta, gamma)
	// + paused.txt:3: zeta
}
