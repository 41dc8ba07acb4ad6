package durable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
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

// MaxLine is the longest line ReadCRCLines reads, as long as a journal line.
const MaxLine = 1 << 20

// ErrLineChecksum is wrapped for a line whose checksum does not match.
var ErrLineChecksum = errors.New("checksum mismatch: the line is damaged")

// AppendLineCRC returns the JSON object obj (as json.Marshal wrote it) with
// its checksum field and a newline.
func AppendLineCRC(obj []byte) []byte {
	sum := crc32.Checksum(obj, Castagnoli)
	obj = append(obj[:len(obj)-1], lineCRCKey...)
	return fmt.Appendf(obj, "%08x\"}\n", sum)
}

// CheckLineCRC checks the checksum of one line (without its newline). A
// line without the field, as written before lines had one, passes.
func CheckLineCRC(row []byte) error {
	n := len(row)
	if n < lineCRCSuffix+2 || !bytes.Equal(row[n-lineCRCSuffix:n-10], []byte(lineCRCKey)) {
		return nil
	}
	want, err := strconv.ParseUint(string(row[n-10:n-2]), 16, 32)
	got := crc32.Update(crc32.Checksum(row[:n-lineCRCSuffix], Castagnoli), Castagnoli, []byte{'}'})
	if err != nil || row[n-2] != '"' || row[n-1] != '}' || uint32(want) != got {
		return ErrLineChecksum
	}
	return nil
}

// ScanLines calls f with each line of b that is not blank (without its
// newline), its 1-based number, and whether it ended in a newline. Lines
// longer than max are not given to f but reported as errors naming
// name:line; so are the errors f returns, and the last line, when it has
// no newline and f fails on it, says it was cut short.
func ScanLines(name string, b []byte, max int, f func(row []byte) error) (bad []error) {
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

// AppendCRCLines appends each of objs to path as a JSON line with its
// checksum, in one write, and fsyncs it (creating the file and its
// directory when missing).
func AppendCRCLines[T any](path string, objs []T) error {
	b, err := crcLines(objs)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return AppendFile(path, b, -1)
}

// WriteCRCLines replaces path with objs as AppendCRCLines writes them,
// atomically (WriteFileAtomic): a file of such lines written again
// without its damaged ones.
func WriteCRCLines[T any](path string, objs []T) error {
	b, err := crcLines(objs)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteFileAtomic(path, b, 0o644)
}

// crcLines returns each of objs as a JSON line with its checksum.
func crcLines[T any](objs []T) ([]byte, error) {
	var b []byte
	for _, o := range objs {
		line, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		b = append(b, AppendLineCRC(line)...)
	}
	return b, nil
}

// AppendFile writes b to the end of the file path and fsyncs it, creating
// the file when missing. With at of 0 or more, the file must exist, is cut
// at at first and b is written there: what a write killed midway left past
// at is written over.
func AppendFile(path string, b []byte, at int64) error {
	if at >= 0 {
		return Files{}.AppendAt(path, b, at, true)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}

// ReadCRCLines reads the JSON lines AppendCRCLines wrote to path, in
// order. A line that fails its checksum or does not decode is skipped and
// named in bad; a missing file holds none.
func ReadCRCLines[T any](path string) (out []T, bad []error, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	bad = ScanLines(path, b, MaxLine, func(row []byte) error {
		if err := CheckLineCRC(row); err != nil {
			return err
		}
		var v T
		if err := json.Unmarshal(row, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, bad, nil
}
