package data

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// version is set at link time by the Makefile:
//
//	-ldflags "-X plug.directory/prober/data.version=v1.2.3"
//
// When it is empty, the module version or VCS revision from the build info
// is used, so the User-Agent never carries a constant someone forgot to bump.
var version string

var buildVersion = sync.OnceValue(func() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "devel"
	}
	return "0.0.0-" + rev + dirty
})

// Version returns the build's own version: the link-time value, else the
// module version, else the VCS revision, else "devel".
func Version() string { return buildVersion() }

func fmtUserAgent(v string) string { return fmt.Sprintf(UserAgentFormat, v) }
