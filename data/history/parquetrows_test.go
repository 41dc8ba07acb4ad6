package history

import "plug.directory/prober/internal/durable"

// writeParquet writes rows to path atomically, with their SumKey.
func writeParquet(path string, rows []ResultRow) error {
	b, err := encodeParquet(path, rows)
	if err != nil {
		return err
	}
	return durable.WriteFileAtomic(path, b, 0o644)
}
