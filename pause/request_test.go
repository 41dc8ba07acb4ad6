package pause

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/pause/pausetest"
)

func newTestRepo(t *testing.T, f *pausetest.GitHub) *Repo {
	return &Repo{Client: fakeClient(t, f, "tok"), Owner: fakeOwner, Name: fakeRepo, Path: listPath, Now: func() time.Time { return t0 }}
}

const ownerNote = "Owner of delta asked by the report form\non 2026-12-02"

func TestOpenRequest_R1_opens_a_pull_request_adding_the_line(t *testing.T) {
	f := newFake(t, map[string]string{listPath: strings.TrimSuffix(goodList, "\n"), "README.md": "directory\n"})
	op, err := newTestRepo(t, f).OpenRequest(context.Background(), Request{Server: "delta", Note: ownerNote, Servers: testServers})
	if err != nil {
		t.Fatal(err)
	}
	wantLine := "delta  # 2026-12-02 Owner of delta asked by the report form on 2026-12-02"
	if op.Number != 1 || op.Branch != "pause/delta-20261202-100000" || op.Line != wantLine || !strings.HasSuffix(op.URL, "/pull/1") {
		t.Errorf("Opened = %+v", op)
	}
	got, _ := f.File(op.Branch, listPath)
	if want := goodList + wantLine + "\n"; got != want {
		t.Errorf("list on the branch = %q, want %q", got, want)
	}
	if main, _ := f.File("main", listPath); main != strings.TrimSuffix(goodList, "\n") {
		t.Errorf("main changed before the merge: %q", main)
	}
	reqs := f.TakeRequests()
	for _, r := range reqs {
		if r.Auth != "Bearer tok" {
			t.Errorf("%s %s without the token", r.Method, r.URI)
		}
	}
	testutil.Golden(t, "testdata/open-request.golden", pausetest.RenderRequests(reqs))
}

func TestOpenRequest_refuses_a_second_request_for_the_same_server(t *testing.T) {
	f := newFake(t, map[string]string{listPath: goodList})
	repo := newTestRepo(t, f)
	first, err := repo.OpenRequest(context.Background(), Request{Server: "delta", Note: "by email"})
	if err != nil {
		t.Fatal(err)
	}
	repo.Now = func() time.Time { return t0.Add(time.Hour) }
	f.TakeRequests()
	_, err = repo.OpenRequest(context.Background(), Request{Server: "delta", Note: "by the form"})
	if !errors.Is(err, ErrAlreadyRequested) || !strings.Contains(err.Error(), "#1 from "+first.Branch) {
		t.Errorf("err = %v, want ErrAlreadyRequested naming #1", err)
	}
	for _, r := range f.TakeRequests() {
		if r.Method != "GET" {
			t.Errorf("refused request still wrote: %s %s", r.Method, r.URI)
		}
	}
	if _, err := repo.OpenRequest(context.Background(), Request{Server: "delta-2"}); err != nil {
		t.Errorf("a server whose id starts like delta: %v, want its own request", err)
	}
	f.Merge(first.Number)
	_, err = repo.OpenRequest(context.Background(), Request{Server: "delta"})
	if !errors.Is(err, ErrAlreadyListed) {
		t.Errorf("after the merge: err = %v, want ErrAlreadyListed", err)
	}
}

func TestOpenRequest_creates_a_missing_list(t *testing.T) {
	f := newFake(t, map[string]string{"README.md": "directory\n"})
	op, err := newTestRepo(t, f).OpenRequest(context.Background(), Request{Server: "https://alpha.example/mcp", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.File(op.Branch, listPath); got != "https://alpha.example/mcp  # 2026-12-02\n" {
		t.Errorf("new list = %q", got)
	}
	if op.Branch != "pause/alpha.example-mcp-20261202-100000" {
		t.Errorf("branch = %s", op.Branch)
	}
}

func TestOpenRequest_refusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server string
		is     error
		msg    string
	}{
		{"R1_id_already_listed", "alpha", ErrAlreadyListed, `paused.txt:2: "alpha" already on the paused list`},
		{"R1_address_already_listed_in_another_spelling", "HTTPS://Shared.example:443/mcp/", ErrAlreadyListed, "paused.txt:3:"},
		{"R1_id_already_paused_by_its_address", "beta", ErrAlreadyListed, "by another line"},
		{"unknown_server", "zeta", ErrNotListed, `"zeta" names no listed server`},
		{"R1_two_entries_on_one_line", "delta gamma", nil, "more than one entry on a line"},
		{"R1_comment_in_the_id", "delta#x", nil, "cannot be a line"},
		{"R1_not_an_address", "https://", nil, "not an address"},
		{"empty", " ", nil, "cannot be a line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, map[string]string{listPath: goodList})
			_, err := newTestRepo(t, f).OpenRequest(context.Background(), Request{Server: tc.server, Servers: testServers})
			if err == nil || !strings.Contains(err.Error(), tc.msg) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("err = %v, want %q (%v)", err, tc.msg, tc.is)
			}
			for _, r := range f.TakeRequests() {
				if r.Method != "GET" {
					t.Errorf("refused request still wrote: %s %s", r.Method, r.URI)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"delta":                        "delta",
		"https://Alpha.example:8443/x": "alpha.example-8443-x",
		"a..b/../c":                    "a.b-.-c",
		"--Ünïcode--id--":              "n-code-id",
		strings.Repeat("x", 60):        strings.Repeat("x", 40),
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
