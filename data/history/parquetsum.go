package history

import (
	"bufio"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"plug.directory/prober/internal/durable"
)

// errParquetDamaged is wrapped by the errors of a damaged history file.
var errParquetDamaged error = durable.DamagedError("parquet file is damaged")

// SumKey is the key-value metadata of a Parquet history file written by
// this version: "N CRC", the CRC-32C (hex) of the file's first N bytes,
// which are its magic and every row group. parquet-go sums each page's
// data, but not the page headers, and a page whose header loses its CRC
// field is read unchecked: one flipped byte could then change an id or a
// status without an error. The footer that holds the sum is not covered by
// it; the reader checks what of the footer matters (the schema) instead.
// Files written before carry no sum and are read as before.
const SumKey = "plug.directory/crc32c"

// summingWriter passes writes on to w, counting and summing them.
type summingWriter struct {
	w   io.Writer
	n   int64
	sum uint32
}

func (s *summingWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.sum = crc32.Update(s.sum, durable.Castagnoli, p[:n])
	s.n += int64(n)
	return n, err
}

// historyWriter writes history rows as Parquet and, on Close, the SumKey
// of the row groups it wrote.
type historyWriter struct {
	*parquet.GenericWriter[ResultRow]
	buf *bufio.Writer
	sum *summingWriter
}

// newHistoryWriter returns a historyWriter into w with the writer options
// of the history (zstd) and more.
func newHistoryWriter(w io.Writer, more ...parquet.WriterOption) *historyWriter {
	buf := bufio.NewWriterSize(w, 1<<20)
	sum := &summingWriter{w: buf}
	// Unbuffered inside parquet-go, so that what sum has seen at Close is
	// every row group: the buffer is below the sum.
	opts := append([]parquet.WriterOption{parquet.Compression(historyZstd), parquet.WriteBufferSize(0)}, more...)
	return &historyWriter{GenericWriter: parquet.NewGenericWriter[ResultRow](sum, opts...), buf: buf, sum: sum}
}

// Close writes the last row group, the sum and the footer.
func (h *historyWriter) Close() error {
	if err := h.Flush(); err != nil {
		return err
	}
	h.SetKeyValueMetadata(SumKey, fmt.Sprintf("%d %08x", h.sum.n, h.sum.sum))
	if err := h.GenericWriter.Close(); err != nil {
		return err
	}
	return h.buf.Flush()
}

// verifyParquet checks the history file pf, of size bytes read from r,
// against its SumKey; a file without one was written before sums and
// passes. Errors wrap errParquetDamaged.
func verifyParquet(r io.ReaderAt, size int64, pf *parquet.File) error {
	v, ok := pf.Lookup(SumKey)
	if !ok {
		return nil
	}
	var n int64
	var want uint32
	if _, err := fmt.Sscanf(v, "%d %x", &n, &want); err != nil || n <= 0 || n > size {
		return fmt.Errorf("%w: bad %s %q", errParquetDamaged, SumKey, v)
	}
	h := crc32.New(durable.Castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, n)); err != nil {
		return err
	}
	if got := h.Sum32(); got != want {
		return fmt.Errorf("%w: checksum mismatch (%08x, want %08x)", errParquetDamaged, got, want)
	}
	// The sum was written with the schema of this version or an earlier
	// one; a footer that names another column (a flipped column name)
	// would read a column as empty.
	if !historySchema(pf.Schema()) {
		return fmt.Errorf("%w: schema is not the history's", errParquetDamaged)
	}
	return checkFooter(pf, n)
}

// historySchema reports whether s is the schema of the history's files of
// this version or of an earlier one: columns are only ever added (as
// optional, or as lists, which read as empty), so each column of s is one
// of resultSchema's, of the same type and levels.
func historySchema(s *parquet.Schema) bool {
	if parquet.EqualNodes(s, resultSchema) {
		return true
	}
	for _, path := range s.Columns() {
		got, _ := s.Lookup(path...)
		want, ok := resultSchema.Lookup(path...)
		if !ok || !parquet.EqualNodes(got.Node, want.Node) || got.MaxRepetitionLevel != want.MaxRepetitionLevel || got.MaxDefinitionLevel != want.MaxDefinitionLevel {
			return false
		}
	}
	return true
}

// checkFooter checks what the footer says of the row groups against the
// schema and the n bytes the sum covers: a flipped count, offset or type
// there would make the decoder read pages that are whole as something they
// are not, and parquet-go can then fail in ways no recover catches (a
// checkptr fault under -race).
func checkFooter(pf *parquet.File, n int64) error {
	md := pf.Metadata()
	schema := pf.Schema() // resultSchema's, or an earlier version's (historySchema)
	leaves := schema.Columns()
	at, rows := int64(4), int64(0) // after the magic
	for g, rg := range md.RowGroups {
		if len(rg.Columns) != len(leaves) || rg.NumRows <= 0 {
			return fmt.Errorf("%w: row group %d: %d columns, %d rows", errParquetDamaged, g, len(rg.Columns), rg.NumRows)
		}
		rows += rg.NumRows
		for c, cc := range rg.Columns {
			m := cc.MetaData
			leaf, _ := schema.Lookup(leaves[c]...)
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 {
				start = m.DictionaryPageOffset
			}
			values := m.NumValues == rg.NumRows || (leaf.MaxRepetitionLevel > 0 && m.NumValues >= rg.NumRows)
			if start != at || m.TotalCompressedSize <= 0 || start+m.TotalCompressedSize > n || !values ||
				parquet.Kind(m.Type) != leaf.Node.Type().Kind() || !slices.Equal(m.PathInSchema, leaves[c]) {
				return fmt.Errorf("%w: row group %d column %s does not match the file", errParquetDamaged, g, strings.Join(leaves[c], "."))
			}
			at = start + m.TotalCompressedSize
		}
	}
	if at != n || rows != md.NumRows {
		return fmt.Errorf("%w: row groups end at byte %d of %d, %d rows of %d", errParquetDamaged, at, n, rows, md.NumRows)
	}
	return nil
}
