// Command latergo makes a copy of the Go toolchain whose time.Now runs
// ahead of the machine's clock by the seconds in GO_WALL_CLOCK_OFFSET, so
// that the whole test suite can be run as it will run years from now
// (`make later`). A test that plans "in the future" with a fixed date, or
// holds a certificate that expires on a fixed day, passes today and fails
// the day the wall clock passes it; the injected clocks of the code under
// test do not catch it, since such a test reads the wall clock through
// the command it runs.
//
// The copy links every file of GOROOT but src/time/time.go, whose Now
// adds the offset, and src/time/zz_walloffset.go, which reads it. Only
// the wall clock moves: monotonic time, timers and the kernel's file
// times do not. A copy made for the same toolchain is kept and reused.
//
//	go run ./cmd/internal/latergo -out /tmp/later-go
//	PATH=/tmp/later-go/bin:$PATH GOROOT=/tmp/later-go GO_WALL_CLOCK_OFFSET=157788000 go test ./...
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "latergo:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("latergo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the directory of the copy (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("usage: latergo -out DIR")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("find GOROOT: %w", err)
	}
	return makeCopy(strings.TrimSpace(string(goroot)), *out)
}

// sourceOf returns the GOROOT a copy was made from when goroot is one
// (latergo run by the copy's go, as `make later` runs its tests), else
// goroot: a copy is always made from the toolchain itself.
func sourceOf(goroot string) string {
	b, err := os.ReadFile(filepath.Join(goroot, stampName))
	if err != nil {
		return goroot
	}
	src, _, _ := strings.Cut(string(b), "\n")
	return src
}

// stampName is the file in the copy that names the GOROOT it was made
// from and the hash of its time package's patched files, so that a copy
// still current is reused and one of another Go made again.
const stampName = ".latergo"

// makeCopy makes dst a copy of goroot (of the toolchain goroot was copied
// from, when it is a copy) whose time.Now reads the offset, or leaves it
// when it is one already.
func makeCopy(goroot, dst string) error {
	goroot = sourceOf(goroot)
	timeGo, err := os.ReadFile(filepath.Join(goroot, "src", "time", "time.go"))
	if err != nil {
		return fmt.Errorf("read time.go: %w", err)
	}
	patched, err := patchNow(timeGo)
	if err != nil {
		return fmt.Errorf("patch %s: %w", filepath.Join(goroot, "src", "time", "time.go"), err)
	}
	sum := sha256.Sum256(append(patched, offsetSource...))
	stamp := []byte(goroot + "\n" + hex.EncodeToString(sum[:]) + "\n")
	if old, err := os.ReadFile(filepath.Join(dst, stampName)); err == nil && bytes.Equal(old, stamp) {
		return nil
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("remove the old copy: %w", err)
	}
	if err := linkTree(goroot, dst); err != nil {
		return fmt.Errorf("copy %s: %w", goroot, err)
	}
	timeDir := filepath.Join(dst, "src", "time")
	for path, b := range map[string][]byte{filepath.Join(timeDir, "time.go"): patched, filepath.Join(timeDir, "zz_walloffset.go"): []byte(offsetSource)} {
		if err := replace(path, b); err != nil {
			return err
		}
	}
	return replace(filepath.Join(dst, stampName), stamp)
}

// replace writes b to a new file at path: the one there is a link to
// GOROOT's, which writing through it would change.
func replace(path string, b []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// nowLine is the line of time.Now that reads the clock; patchNow adds the
// offset to the seconds it read.
const nowLine = "func Now() Time {\n\tsec, nsec, mono := runtimeNow()\n"

// patchNow returns time.go with Now adding wallOffset to the wall clock's
// seconds, or an error when its Now is not the one this knows.
func patchNow(src []byte) ([]byte, error) {
	if bytes.Count(src, []byte(nowLine)) != 1 {
		return nil, fmt.Errorf("no %q in time.Now: this Go's time package is not the one latergo knows", nowLine)
	}
	return bytes.Replace(src, []byte(nowLine), []byte(nowLine+"\tsec += wallOffset\n"), 1), nil
}

// offsetSource is the file the copy's time package gains: the offset read
// once, at start, from the environment (os cannot be imported from time).
const offsetSource = `package time

import "syscall"

// wallOffset is the seconds time.Now runs ahead of the wall clock:
// GO_WALL_CLOCK_OFFSET, a whole number (negative: behind), else 0.
var wallOffset = func() int64 {
	v, _ := syscall.Getenv("GO_WALL_CLOCK_OFFSET")
	n, neg := int64(0), false
	for i, c := range v {
		switch {
		case i == 0 && c == '-':
			neg = true
		case c >= '0' && c <= '9':
			n = n*10 + int64(c-'0')
		default:
			return 0
		}
	}
	if neg {
		return -n
	}
	return n
}()
`

// linkTree makes dst a tree of hard links to the files of src (copies
// where a link cannot be made, as across file systems), with its
// directories and symbolic links.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		if os.Link(path, to) == nil {
			return nil
		}
		return copyFile(path, to)
	})
}

func copyFile(from, to string) error {
	fi, err := os.Stat(from)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, fi.Mode().Perm())
}
