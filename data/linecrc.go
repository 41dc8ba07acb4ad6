package data

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
)

// lineCRCKey starts the last field of a journal or plan line: the CRC-32C
// (Castagnoli) of the line as it would be without that field, as eight hex
// digits. The line stays one JSON object (readers that do not know the
// field ignore it), and a flipped bit anywhere in it is caught rather than
// recording a result under, or checking, another server.
const lineCRCKey = `,"crc32c":"`

// lineCRCSuffix is the length of the field: key, eight digits, quote and
// the closing brace.
const lineCRCSuffix = len(lineCRCKey) + 8 + 2

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errLineChecksum is wrapped for a line whose checksum does not match.
var errLineChecksum = errors.New("checksum mismatch: the line is damaged")

// appendLineCRC returns the JSON object obj (as json.Marshal wrote it) with
// its checksum field and a newline.
func appendLineCRC(obj []byte) []byte {
	sum := crc32.Checksum(obj, castagnoli)
	obj = append(obj[:len(obj)-1], lineCRCKey...)
	return fmt.Appendf(obj, "%08x\"}\n", sum)
}

// checkLineCRC checks the checksum of one line (without its newline). A
// line without the field, as written before lines had one, passes.
func checkLineCRC(row []byte) error {
	n := len(row)
	if n < lineCRCSuffix+2 || !bytes.Equal(row[n-lineCRCSuffix:n-10], []byte(lineCRCKey)) {
		return nil
	}
	want, err := strconv.ParseUint(string(row[n-10:n-2]), 16, 32)
	got := crc32.Update(crc32.Checksum(row[:n-lineCRCSuffix], castagnoli), castagnoli, []byte{'}'})
	if err != nil || row[n-2] != '"' || row[n-1] != '}' || uint32(want) != got {
		return errLineChecksum
	}
	return nil
}

// lines calls f with each line of b that is not blank (without its
// newline), its 1-based number, and whether it ended in a newline. Lines
// longer than max are not given to f but reported as errors naming
// name:line; so are the errors f returns, and the last line, when it has
// no newline and f fails on it, says it was cut short.
func lines(name string, b []byte, max int, f func(row []byte) error) (bad []error) {
	for line := 1; len(b) > 0; line++ {
		row, rest, whole := bytes.Cut(b, []byte{'\n'})
		b = rest
		if len(bytes.TrimSpace(row)) == 0 {
			continue
		}
		if len(row) > max {
			bad = append(bad, fmt.Errorf("%s:%d: line of %d bytes, over the %d a line may take", name, line, len(row), max))
			continue
		}
		if err := f(row); err != nil {
			if !whole {
				err = fmt.Errorf("last line cut short: %w", err)
			}
			bad = append(bad, fmt.Errorf("%s:%d: %w", name, line, err))
		}
	}
	return bad
}
