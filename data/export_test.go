package data

// ParseServers is ReadServers of a list in memory, named name in errors.
func ParseServers(name string, b []byte) (servers []Server, bad []error, err error) {
	return parseServers(name, string(b))
}

// writeParquet writes rows to path atomically, with their SumKey.
func writeParquet(path string, rows []ResultRow) error {
	b, err := encodeParquet(path, rows)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b, 0o644)
}
