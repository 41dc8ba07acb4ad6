package site

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/spool"
)

// screenshots, when set, is where TestPreviewInBrowser writes its PNGs
// (`make screenshots` sets it to docs/screenshots).
var screenshots = flag.String("screenshots", "", "write the preview's screenshots at 390 and 1280 px into this directory")

// month publishes a month of checks of a server of every status, as the
// prober would have recorded them: alpha working with a bad day, bravo
// needing a key, charlie refused now and then, echo failing since
// yesterday, foxtrot paused, golf new, delta without an address.
func month(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.writeServers(fixServers)
	f.writePaused("foxtrot\n")
	var rs []data.Result
	for day := 30; day >= 0; day-- {
		for _, h := range []int{1, 7, 13, 19} {
			at := fixNow.Truncate(24*time.Hour).AddDate(0, 0, -day).Add(time.Duration(h)*time.Hour + 17*time.Second)
			if at.After(fixNow) {
				continue
			}
			add := func(s data.Server, o data.Outcome, why string, ms int) {
				r := result(s, at, o, why)
				r.Duration = time.Duration(ms) * time.Millisecond
				rs = append(rs, r)
			}
			alpha := data.Working
			if day == 12 && h < 13 {
				alpha = data.Failing
			}
			add(srvWorking, alpha, map[bool]string{true: "HTTP 502"}[alpha == data.Failing], 300+40*(day%5)+h*10)
			add(srvKey, data.NeedsKey, "HTTP 401", 150+day)
			if day%9 == 0 {
				add(srvRefused, data.Refused, "HTTP 429", 80)
			} else {
				add(srvRefused, data.Working, "", 900+100*(day%3))
			}
			if day == 0 {
				add(srvFailing, data.Failing, "connection refused", 3)
			} else {
				add(srvFailing, data.Working, "", 3500+200*(h%3))
			}
			if day > 3 {
				add(srvPaused, data.Working, "", 600)
			}
		}
	}
	f.results(rs...)
	f.fold()
	if err := spool.MarkMinuteRecorded(f.dir, fixNow.Add(-time.Minute)); err != nil { // the checks are running
		t.Fatal(err)
	}
	f.MustPublish()
	return f
}

// TestPreviewInBrowser proves the preview's layout in a real browser: at 390 px
// (a phone) and 1280 px, no page of the preview is wider than the window
// and every chart ends inside it, so the newest days are seen. It runs
// Debian's Chromium headless on the preview of a month of every status,
// measuring the laid-out page with a script added to a copy of each page
// (the preview itself has none); with -screenshots it also writes PNGs.
func TestPreviewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium 20 times (about 20 s): full mode only, make test runs it")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (make test installs it as root with apt-get): the preview's layout is not checked in a browser")
	}
	f := month(t)
	// The page is measured inside a frame as wide as a phone (headless
	// Chromium's window is at least 500 px wide), and says what it
	// measured into the frame's parent, which --dump-dom prints.
	const probe = `<script>parent.document.body.insertAdjacentHTML("beforeend", "<pre id=layout>" +
innerWidth + " " + document.documentElement.scrollWidth + " " +
[...document.querySelectorAll("svg")].map(s => Math.ceil(s.getBoundingClientRect().right)).join(",") + "</pre>")</script>`
	layout := regexp.MustCompile(`<pre id="layout">(\d+) (\d+) ([\d,]*)</pre>`)
	for _, page := range []string{"index.html", "servers/alpha.html", "servers/echo.html", "servers/golf.html", "servers/foxtrot.html"} {
		src := filepath.Join(f.out, filepath.FromSlash(page))
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		measured := filepath.Join(filepath.Dir(src), "measured-"+filepath.Base(src))
		if err := os.WriteFile(measured, bytes.Replace(b, []byte("</body>"), []byte(probe+"</body>"), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int{390, 1280} {
			t.Run(fmt.Sprintf("%s_at_%d_px", page, width), func(t *testing.T) {
				out := runChromium(t, chromium, width, "--dump-dom", "file://"+framed(t, measured, width))
				m := layout.FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no layout measured; chromium said:\n%.2000s", out)
				}
				inner, _ := strconv.Atoi(m[1])
				scroll, _ := strconv.Atoi(m[2])
				if inner != width {
					t.Fatalf("window %d px wide; want %d", inner, width)
				}
				if scroll > inner {
					t.Errorf("the page is %d px wide in a %d px window", scroll, inner)
				}
				for _, r := range strings.Split(m[3], ",") {
					if right, _ := strconv.Atoi(r); r != "" && right > inner {
						t.Errorf("a chart ends at %d px, past the window's %d px: its newest days are cut off", right, inner)
					}
				}
				if *screenshots != "" && page != "servers/golf.html" && page != "servers/foxtrot.html" {
					name := strings.TrimSuffix(strings.ReplaceAll(page, "/", "-"), ".html") + "-" + strconv.Itoa(width) + ".png"
					png, err := filepath.Abs(filepath.Join(*screenshots, name))
					if err != nil {
						t.Fatal(err)
					}
					runChromium(t, chromium, width, "--screenshot="+png, "--hide-scrollbars", "file://"+framed(t, src, width))
					cropPNG(t, png, width)
				}
			})
		}
	}
}

// framed writes a page that shows page in a frame width px wide, and
// returns its path.
func framed(t *testing.T, page string, width int) string {
	t.Helper()
	path := filepath.Join(filepath.Dir(page), fmt.Sprintf("frame-%d-%s", width, filepath.Base(page)))
	html := fmt.Sprintf(`<!doctype html><body style="margin:0"><iframe src="%s" style="border:0;width:%dpx;height:1800px"></iframe></body>`, filepath.Base(page), width)
	if err := os.WriteFile(path, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runChromium runs headless Chromium at width px on args, with no network
// of its own and a profile of its own, and returns what it printed.
func runChromium(t *testing.T, chromium string, width int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	height := 900
	if width < 500 {
		height = 1800
	}
	cmd := exec.CommandContext(ctx, chromium, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--allow-file-access-from-files", "--user-data-dir=" + t.TempDir(),
		fmt.Sprintf("--window-size=%d,%d", max(width, 500), height)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%.2000s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// cropPNG cuts the screenshot at path to width px, the frame's: the window
// around it is wider.
func cropPNG(t *testing.T, path string, width int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("read screenshot %s: %v", path, err)
	}
	r := img.Bounds()
	r.Max.X = min(r.Max.X, r.Min.X+width)
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		t.Fatalf("screenshot %s: cannot crop a %T", path, img)
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, sub.SubImage(r)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
