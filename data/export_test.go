package data

// ParseServers is ReadServers of a list in memory, named name in errors.
func ParseServers(name string, b []byte) (servers []Server, bad []error, err error) {
	return parseServers(name, string(b))
}
