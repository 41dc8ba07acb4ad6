package durable

import (
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// readSummed reads the file at path into one string and returns it with
// its CRC-32 by tab, computed as it is read. Errors are os.Open's and the
// read's, unwrapped.
func readSummed(path string, tab *crc32.Table) (string, uint32, error) {
	sum := crc32.New(tab)
	text, err := ReadText(path, sum)
	return text, sum.Sum32(), err
}

// ReadText reads the file at path into a string in one allocation, also
// writing it to each of also (a checksum, computed on the way): a
// million-row file read every minute is not held twice, as bytes and as
// the string whose substrings the rows keep. Errors are os.Open's and the
// read's, unwrapped.
func ReadText(path string, also ...io.Writer) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readText(f, also...)
}

// ReadSummedFile is ReadSummed of a file already open, read from where it
// is: a reader that must know which file it read (one replaced since) keeps
// it open to compare it.
func ReadSummedFile(f *os.File) (string, uint32, error) {
	sum := crc32.New(Castagnoli)
	text, err := readText(f, sum)
	return text, sum.Sum32(), err
}

// readText is ReadText of an open file.
func readText(f *os.File, also ...io.Writer) (string, error) {
	var sb strings.Builder
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		sb.Grow(int(fi.Size()) + 1)
	}
	if _, err := io.Copy(io.MultiWriter(append([]io.Writer{&sb}, also...)...), f); err != nil {
		return "", err
	}
	return sb.String(), nil
}
