package pause

import (
	"fmt"
	"strings"

	"plug.directory/prober/data/lists"
)

// SpecPrefix starts a paused-list source that lives on GitHub, as in
// "github:OWNER/REPO/PATH[@REF]". Anything else is a local file.
const SpecPrefix = lists.PausedRemotePrefix

// Spec names a paused list kept in a GitHub repository.
type Spec struct {
	Owner string
	Repo  string
	Path  string // file path inside the repository, without a leading slash
	Ref   string // branch, tag or commit; "" means the default branch
}

// IsSpec reports whether source names a list on GitHub rather than a local
// file.
func IsSpec(source string) bool { return strings.HasPrefix(source, SpecPrefix) }

// ParseSpec parses "github:OWNER/REPO/PATH[@REF]". The ref is what follows
// the last '@', so a path that itself holds an '@' needs an explicit @REF.
// It returns an error naming the source when a part is missing or the path
// climbs out of the repository.
func ParseSpec(source string) (Spec, error) {
	rest, ok := strings.CutPrefix(source, SpecPrefix)
	if !ok {
		return Spec{}, fmt.Errorf("parse paused-list source %q: does not start with %q", source, SpecPrefix)
	}
	var s Spec
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest, s.Ref = rest[:i], rest[i+1:]
		if s.Ref == "" {
			return Spec{}, fmt.Errorf("parse paused-list source %q: empty ref after '@'", source)
		}
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Spec{}, fmt.Errorf("parse paused-list source %q: want %sOWNER/REPO/PATH[@REF]", source, SpecPrefix)
	}
	s.Owner, s.Repo, s.Path = parts[0], parts[1], strings.Trim(parts[2], "/")
	if err := checkRepoPath(s.Path); err != nil {
		return Spec{}, fmt.Errorf("parse paused-list source %q: %w", source, err)
	}
	return s, nil
}

// String returns the spec in the form ParseSpec reads.
func (s Spec) String() string {
	out := SpecPrefix + s.Owner + "/" + s.Repo + "/" + s.Path
	if s.Ref != "" {
		out += "@" + s.Ref
	}
	return out
}

// checkRepoPath refuses paths the contents API would not take or that climb
// out of the repository.
func checkRepoPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty file path")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("bad file path %q", p)
		}
	}
	return nil
}

// SplitRepo splits "OWNER/REPO", as the -repo flag of cmd/pause takes it.
func SplitRepo(ownerRepo string) (owner, repo string, err error) {
	owner, repo, ok := strings.Cut(ownerRepo, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", fmt.Errorf("parse repository %q: want OWNER/REPO", ownerRepo)
	}
	return owner, repo, nil
}
