package cli

import "strings"

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
