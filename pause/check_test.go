package pause

import (
	"context"
	"testing"

	"plug.directory/prober/pause/pausetest"
)

func ptr(s string) *string { return &s }

func TestCheckPullRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(f *pausetest.GitHub) // commits on branch "req", and maybe on main after it
		want    string                    // the printed verdict
	}{
		{
			name:    "R1_adds_a_listed_server_by_id",
			prepare: func(f *pausetest.GitHub) { f.Commit("req", listPath, goodList+"delta  # asked by email\n") },
			want: "pull request #1 changing paused.txt: acceptable\n" +
				"+ paused.txt:4: delta  # asked by email  (pauses delta)\n",
		},
		{
			name:    "R1_adds_an_address_that_pauses_every_server_at_it",
			prepare: func(f *pausetest.GitHub) { f.Commit("req", listPath, "https://Shared.example/mcp\nalpha\n") },
			want: "pull request #1 changing paused.txt: acceptable\n" +
				"+ paused.txt:1: https://Shared.example/mcp  (pauses beta, gamma)\n" +
				"- paused.txt:1 (base): # paused at the owner's request\n" +
				"- paused.txt:3 (base): https://shared.example/mcp  # two servers here  (resumes beta, gamma)\n",
		},
		{
			name: "R2_removing_a_line_resumes_and_is_acceptable",
			prepare: func(f *pausetest.GitHub) {
				f.Commit("req", listPath, "# paused at the owner's request\nhttps://shared.example/mcp  # two servers here\n")
			},
			want: "pull request #1 changing paused.txt: acceptable\n" +
				"- paused.txt:2 (base): alpha  (resumes alpha)\n",
		},
		{
			name: "only_lines_added_since_the_merge_base_count",
			prepare: func(f *pausetest.GitHub) {
				f.Commit("req", listPath, goodList+"delta\n")
				f.Commit("main", listPath, "gamma\n"+goodList) // merged meanwhile
			},
			want: "pull request #1 changing paused.txt: acceptable\n" +
				"+ paused.txt:4: delta  (pauses delta)\n",
		},
		{
			name:    "unknown_server",
			prepare: func(f *pausetest.GitHub) { f.Commit("req", listPath, goodList+"zeta\n") },
			want: "pull request #1 changing paused.txt: not acceptable\n" +
				"problem: paused.txt:4: \"zeta\" names no listed server\n" +
				"+ paused.txt:4: zeta\n",
		},
		{
			name:    "R1_malformed_line",
			prepare: func(f *pausetest.GitHub) { f.Commit("req", listPath, goodList+"delta gamma\n") },
			want: "pull request #1 changing paused.txt: not acceptable\n" +
				"problem: paused.txt:4: more than one entry on a line: \"delta gamma\"\n" +
				"+ paused.txt:4: delta gamma\n",
		},
		{
			name: "touches_another_file",
			prepare: func(f *pausetest.GitHub) {
				f.CommitFiles("req", map[string]*string{listPath: ptr(goodList + "delta\n"), ".github/workflows/ci.yml": ptr("on: push\n")})
			},
			want: "pull request #1 changing paused.txt: not acceptable\n" +
				"problem: changes .github/workflows/ci.yml; a pause request may change only paused.txt\n" +
				"+ paused.txt:4: delta  (pauses delta)\n",
		},
		{
			name:    "does_not_touch_the_list",
			prepare: func(f *pausetest.GitHub) { f.Commit("req", "README.md", "hello\n") },
			want: "pull request #1 changing paused.txt: not acceptable\n" +
				"problem: changes README.md; a pause request may change only paused.txt\n",
		},
		{
			name:    "R2_deleting_the_list",
			prepare: func(f *pausetest.GitHub) { f.CommitFiles("req", map[string]*string{listPath: nil}) },
			want: "pull request #1 changing paused.txt: not acceptable\n" +
				"problem: paused.txt is removed; it may only gain or lose lines\n",
		},
		{
			name:    "not_text",
			prepare: func(f *pausetest.GitHub) { f.Commit("req", listPath, goodList+"\xff\n") },
			want: "pull request #1 changing paused.txt: not acceptable\n" +
				"problem: bad content: paused.txt is not UTF-8 text\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, map[string]string{listPath: goodList})
			tc.prepare(f)
			n := f.OpenPull("main", "req")
			v, err := newTestRepo(t, f).CheckPullRequest(context.Background(), n, testServers)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.String(); got != tc.want {
				t.Errorf("verdict:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestCheckPullRequest_R1_accepts_what_OpenRequest_opens: the two halves of
// cmd/pause agree.
func TestCheckPullRequest_R1_accepts_what_OpenRequest_opens(t *testing.T) {
	f := newFake(t, map[string]string{listPath: goodList})
	repo := newTestRepo(t, f)
	op, err := repo.OpenRequest(context.Background(), Request{Server: "https://delta.example/mcp", Note: "ticket 7"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := repo.CheckPullRequest(context.Background(), op.Number, testServers)
	if err != nil || !v.OK() || len(v.Added) != 1 || v.Added[0].Text != op.Line || len(v.Removed) != 0 {
		t.Errorf("verdict %+v, %v; want the one added line accepted", v, err)
	}
}
