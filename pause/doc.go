// Package pause carries owners' requests to stop the checks of their server
// (rules R1, R2, S8, P4) between the paused list kept in a Git repository on
// GitHub and the planner.
//
// It is a top-level package, beside data rather than inside it, because it
// owns the prober's one GitHub dependency (github.com/google/go-github/v60):
// no other package imports go-github, as only data imports parquet-go and only
// runner opens connections to probed servers. Two commands use it: cmd/plan
// fetches the paused list through Fetch before it plans, and cmd/pause opens a
// pull request that adds a server to the list (Repo.OpenRequest) and checks
// such a pull request for the directory repository's CI
// (Repo.CheckPullRequest).
//
// The list on GitHub is the source of truth; the data directory keeps the last
// good copy (DIR/paused/last-good.txt) so that no failure to read GitHub, and
// no malformed version of the file, ever resumes a paused server's checks
// (rule R2). The GitHub token, when there is one, is sent only to the GitHub
// API host: never on a redirect elsewhere, and never near a probed server,
// since only runner talks to those and it never sees this package.
package pause
