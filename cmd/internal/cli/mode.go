package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// HasFlag reports whether args set the flag name (-name, --name, -name=v or
// --name=v), looking no further than a "--" that ends the flags. The
// commands with several modes use it to keep the flags that picked a mode
// before the modes had names (run -url, plan -simulate).
func HasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			continue // a value, or an argument
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// ParseMode parses the flags of one mode of a command: fs's usage is the
// lines of usage, then the flags' defaults; args are parsed as Parse does;
// then valid is asked, and what it reports is bad usage (exit status 2).
// valid reads what the flags set: a closure, not a method value, which
// would copy the configuration before the flags are parsed.
func ParseMode(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, usage string, valid func() error) error {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := Parse(fs, args, stdout, stderr); err != nil {
		return err
	}
	if err := valid(); err != nil {
		return Usage(err)
	}
	return nil
}

// Logger returns a command's log on stderr at level, or at verbose when
// the command's -v is set.
func Logger(stderr io.Writer, level, verbose slog.Level, v bool) *slog.Logger {
	if v {
		level = verbose
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}
