package pause

import (
	"log/slog"
	"time"

	"github.com/google/go-github/v60/github"
)

// Repo is the directory repository that holds the paused list, as cmd/pause
// works on it: opening pause requests and checking them in CI.
type Repo struct {
	Client *github.Client   // from NewClient
	Owner  string           // repository owner
	Name   string           // repository name
	Path   string           // the paused list inside the repository
	Now    func() time.Time // nil means time.Now
	Logger *slog.Logger     // nil discards
}

func (r *Repo) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Repo) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}
