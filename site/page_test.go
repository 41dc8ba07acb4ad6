package site

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"plug.directory/prober/internal/testutil"
	"plug.directory/prober/site/checks"
	"plug.directory/prober/site/pages"
)

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, "testdata/"+name, got)
}

// squeeze drops the page's markup and every white space, so that the
// rendered page can be compared word for word with the public text.
func squeeze(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimPrefix(line, "## ")
		line = strings.TrimPrefix(line, "# ")
		line = strings.TrimPrefix(line, "- ")
		b.WriteString(line)
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, b.String())
}

// mangledContact is the address of the public text as its web page's
// e-mail protection left it.
const mangledContact = "[email protected]"

func TestChecksPage(t *testing.T) {
	t.Parallel()
	page, err := checks.Text(checks.Facts(fixContact))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("P2_says_what_the_public_page_says", func(t *testing.T) {
		// testdata/checks-page.reference.txt is the public page as
		// published (its list of methods run together): every sentence is
		// a requirement, so the rendered page must say exactly it.
		ref, err := os.ReadFile(filepath.Join("testdata", "checks-page.reference.txt"))
		if err != nil {
			t.Fatal(err)
		}
		// The public text carries the operator's address as a web page's
		// e-mail protection mangled it: the page must say the address
		// configured instead, and never the mangled words.
		if !bytes.Contains(ref, []byte(mangledContact)) {
			t.Fatalf("the public text no longer has %q: revisit this test", mangledContact)
		}
		ref = bytes.ReplaceAll(ref, []byte(mangledContact), []byte(fixContact))
		if bytes.Contains(page, []byte("email protected")) || !bytes.Contains(page, []byte("Write to "+fixContact+" with the server's name")) {
			t.Errorf("the page does not give the configured contact %q in place of %q:\n%s", fixContact, mangledContact, page)
		}
		if got, want := squeeze(string(page)), squeeze(string(ref)); got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("rendered page departs from the public page at byte %d:\n got: …%.80s\nwant: …%.80s", i, got[i:], want[i:])
		}
	})
	t.Run("P2_golden_text", func(t *testing.T) { golden(t, "golden/checks.txt", page) })
	t.Run("P2_golden_html", func(t *testing.T) {
		h, err := pages.Checks(page)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "golden/checks.html", h)
	})
}

// TestContactRequired proves the operator's contact is required:
// a publish without it, or with something that is no bare
// address, fails before writing anything, naming the setting.
func TestContactRequired(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ contact, want string }{
		{"", "site config: contact: none given"},
		{"stop checks", `site config: contact: "stop checks" is not a bare e-mail address`},
		{"Ops <ops@example.org>", `site config: contact: "Ops <ops@example.org>" is not a bare e-mail address`},
	} {
		f := newStandard(t)
		cfg := f.config()
		cfg.Contact = c.contact
		if _, err := Publish(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("contact %q: err %v, want %q", c.contact, err, c.want)
		}
		if _, err := os.Stat(f.out); !os.IsNotExist(err) {
			t.Errorf("contact %q: %s written: %v", c.contact, f.out, err)
		}
	}
}
