package lists

import "plug.directory/prober/data"

// ParseServers is ReadServers of a list in memory, named name in errors.
func ParseServers(name string, b []byte) (servers []data.Server, bad []error, err error) {
	return parseServers(name, string(b))
}
