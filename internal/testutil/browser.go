package testutil

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The browser tests' npm dependencies (axe-core, Lighthouse), pinned by
// the lock file; mustBrowserTools installs them with `npm ci`.
var (
	//go:embed browser/package.json
	browserPackage []byte
	//go:embed browser/package-lock.json
	browserLock []byte
)

// Browser is Debian's headless Chromium driven over the DevTools protocol
// on a pipe (--remote-debugging-pipe: it reads commands on fd 3 and writes
// answers on fd 4, each a JSON message ended by a NUL byte), one tab for
// every page it is asked to load. It reaches no network: every host name
// resolves to nothing, and the pages it loads are files.
type Browser struct {
	w       io.WriteCloser
	msgs    chan cdpMessage // what Chromium writes, one message at a time; closed when it stops
	next    int
	session string
	events  []cdpMessage // events read while waiting for an answer
	errors  []string     // what the open page reported as errors: script exceptions, console errors, failed loads
}

type cdpMessage struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	SessionID string          `json:"sessionId"`
	Result    json.RawMessage `json:"result"`
	Params    json.RawMessage `json:"params"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// MustBrowser starts headless Chromium with a profile of its own and
// stops it when tb ends. It skips tb, saying so, where Chromium is not
// installed; it fails tb when Chromium does not start.
func MustBrowser(tb testing.TB) *Browser {
	tb.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		tb.Skip("chromium not installed (`make tools` installs Debian's as root): the pages are not checked in a browser")
	}
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	fromChrome, theirEnd, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--remote-debugging-pipe",
		"--user-data-dir="+tb.TempDir(), "about:blank")
	cmd.Env = ChildEnv(tb)                          // where it leaves its singleton socket
	cmd.ExtraFiles = []*os.File{toChrome, theirEnd} // fd 3, fd 4
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start chromium: %v", err)
	}
	toChrome.Close()
	theirEnd.Close()
	b := &Browser{w: ourEnd, msgs: make(chan cdpMessage, 16)}
	go func() {
		defer close(b.msgs)
		r := bufio.NewReader(fromChrome)
		for {
			line, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMessage
			if json.Unmarshal(bytes.TrimSuffix(line, []byte{0}), &m) == nil {
				b.msgs <- m
			}
		}
	}()
	tb.Cleanup(func() {
		ourEnd.Close() // Chromium ends when its pipe closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		fromChrome.Close()
		for range b.msgs { // let the reader end
		}
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		tb.Fatalf("chromium: %v\n%.2000s", err, stderr.String())
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		tb.Fatalf("chromium: %v", err)
	}
	b.session = attached.SessionID
	for _, domain := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.call(b.session, domain, nil, nil); err != nil {
			tb.Fatalf("chromium: %v", err)
		}
	}
	return b
}

// call sends one command and waits for its answer, keeping the events read
// meanwhile; it gives up after a minute.
func (b *Browser) call(session, method string, params any, result any) error {
	b.next++
	id := b.next
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params, "sessionId": session})
	if err != nil {
		return fmt.Errorf("devtools %s: %w", method, err)
	}
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	}
	if _, err := b.w.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("devtools %s: %w", method, err)
	}
	for {
		m, err := b.read(method)
		if err != nil {
			return err
		}
		if m.ID != id {
			if m.Method != "" {
				b.events = append(b.events, m)
			}
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("devtools %s: %s", method, m.Error.Message)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("devtools %s: %w", method, err)
		}
		return nil
	}
}

// read reads the next message, giving up after a minute.
func (b *Browser) read(method string) (cdpMessage, error) {
	select {
	case m, ok := <-b.msgs:
		if !ok {
			return cdpMessage{}, fmt.Errorf("devtools %s: chromium has stopped", method)
		}
		b.noteError(m)
		return m, nil
	case <-time.After(time.Minute):
		return cdpMessage{}, fmt.Errorf("devtools %s: no answer in a minute", method)
	}
}

// noteError keeps what an event of the page says went wrong: an exception
// a script threw, an error it logged, a resource that failed to load (a
// favicon's 404 among them), as Lighthouse's "no errors in the console".
func (b *Browser) noteError(m cdpMessage) {
	if m.SessionID != b.session {
		return
	}
	switch m.Method {
	case "Runtime.exceptionThrown":
		var p struct {
			Details struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		json.Unmarshal(m.Params, &p)
		b.errors = append(b.errors, "script: "+p.Details.Text+" "+p.Details.Exception.Description)
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level, Text, URL string
			} `json:"entry"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" {
			b.errors = append(b.errors, "console: "+p.Entry.Text+" "+p.Entry.URL)
		}
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" {
			b.errors = append(b.errors, "console."+p.Type+" called")
		}
	}
}

// Errors returns what the open page reported as errors since it was
// opened.
func (b *Browser) Errors() []string { return b.errors }

// waitEvent waits for an event of the page's session.
func (b *Browser) waitEvent(method string) error {
	for {
		for i, e := range b.events {
			if e.Method == method && e.SessionID == b.session {
				b.events = append(b.events[:i:i], b.events[i+1:]...)
				return nil
			}
		}
		m, err := b.read(method)
		if err != nil {
			return err
		}
		if m.Method != "" {
			b.events = append(b.events, m)
		}
	}
}

// Open loads the file at path in a window width px wide (a phone's, with
// its viewport rules, under 500 px) and height px high, and waits for its
// load event.
func (b *Browser) Open(path string, width, height int) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if err := b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500}, nil); err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	b.events = b.events[:0]
	b.errors = b.errors[:0]
	if err := b.call(b.session, "Page.navigate", map[string]any{"url": "file://" + abs}, nil); err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if err := b.waitEvent("Page.loadEventFired"); err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	return nil
}

// SetTimezone makes the pages opened next see the time zone id (IANA,
// "Asia/Kolkata") as the reader's.
func (b *Browser) SetTimezone(id string) error {
	if err := b.call(b.session, "Emulation.setTimezoneOverride", map[string]any{"timezoneId": id}, nil); err != nil {
		return fmt.Errorf("set time zone %s: %w", id, err)
	}
	return nil
}

// Eval runs a script in the open page, waits for the promise it may
// return and decodes its JSON value into v.
func (b *Browser) Eval(script string, v any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call(b.session, "Runtime.evaluate", map[string]any{"expression": script, "awaitPromise": true, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("script: %s %s", r.Exception.Text, r.Exception.Exception.Description)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result.Value, v); err != nil {
		return fmt.Errorf("script value %.200s: %w", r.Result.Value, err)
	}
	return nil
}

// Screenshot writes the open page from its top, as tall as it is but at
// most maxHeight px (0: no limit), as a PNG to path.
func (b *Browser) Screenshot(path string, maxHeight int) error {
	var size struct{ W, H float64 }
	if err := b.Eval(`({W: document.documentElement.clientWidth, H: document.documentElement.scrollHeight})`, &size); err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	if maxHeight > 0 {
		size.H = min(size.H, float64(maxHeight))
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": size.W, "height": size.H, "scale": 1}}, &shot); err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	return nil
}

// Layout is what a page measures in a window: its width, the elements
// that make a reader scroll sideways, and the text squeezed too narrow to read.
type Layout struct {
	Window      int      // innerWidth, px: a phone widens it to a page wider than its viewport
	ScrollWidth int      // the page's own width, px: wider than the window is a sideways scroll
	Past        []string // visible elements whose right edge is past the width asked for
	Scrolls     []string // boxes that scroll sideways inside the page (a hidden scroll on a phone)
	Squeezed    []string // visible elements whose own text of 12 characters or more stands in a box under 4 em wide and over 4 lines tall (a word a line, or a letter)
}

// layoutScript measures the open page in a window of the width given
// (%d). An element is named by its tag, classes and first words; the part
// of it that a box around it clips is not seen, so it does not count as
// past the edge (a box that scrolls sideways counts in Scrolls). Its own
// text is that of its text nodes, not its children's; an element under a
// clip-path (text for screen readers alone) is not squeezed.
const layoutScript = `(() => {
const name = e => e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\s+/).join(".") : "") + " " + JSON.stringify((e.textContent || "").trim().slice(0, 40));
const own = e => Array.from(e.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join("").trim();
const clipped = e => { for (let a = e; a; a = a.parentElement) if (getComputedStyle(a).clipPath !== "none") return true; return false; };
const w = %d, past = [], scrolls = [], squeezed = [];
const right = e => {
  let r = e.getBoundingClientRect().right;
  for (let a = e.parentElement; a; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (s.overflowX !== "visible" || s.clipPath !== "none") r = Math.min(r, a.getBoundingClientRect().right);
  }
  return r;
};
for (const e of document.body.querySelectorAll("*")) {
  const r = e.getBoundingClientRect();
  if (r.width > 0 && r.height > 0 && Math.floor(right(e)) > w) past.push(name(e) + " ends at " + Math.ceil(r.right) + " px");
  const o = getComputedStyle(e).overflowX;
  if ((o === "auto" || o === "scroll") && e.scrollWidth > e.clientWidth) scrolls.push(name(e) + " scrolls " + (e.scrollWidth - e.clientWidth) + " px sideways");
  if (r.width > 1 && r.height > 1 && own(e).length >= 12 && !clipped(e) && r.width < 4 * parseFloat(getComputedStyle(e).fontSize) && r.height > 4 * 1.5 * parseFloat(getComputedStyle(e).fontSize)) squeezed.push(name(e) + " is " + Math.round(r.width) + " px wide, " + Math.round(r.height) + " px tall");
}
return {Window: innerWidth, ScrollWidth: document.documentElement.scrollWidth, Past: past.slice(0, 20), Scrolls: scrolls.slice(0, 20), Squeezed: squeezed.slice(0, 20)};
})()`

// Layout measures the open page in a window width px wide.
func (b *Browser) Layout(width int) (Layout, error) {
	var l Layout
	if err := b.Eval(fmt.Sprintf(layoutScript, width), &l); err != nil {
		return l, fmt.Errorf("measure the page: %w", err)
	}
	return l, nil
}

// AxeViolation is one rule of axe-core that a page breaks, with the nodes
// that break it.
type AxeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"` // each node's CSS selector and axe's summary of what is wrong
}

func (v AxeViolation) String() string {
	return fmt.Sprintf("%s (%s): %s; %d node(s): %v", v.ID, v.Impact, v.Help, len(v.Nodes), v.Nodes)
}

// Axe runs axe-core (its source: MustAxe) with every rule it runs by
// default, WCAG 2.2 A and AA and its best practices, on the open page.
func (b *Browser) Axe(axeSource string) ([]AxeViolation, error) {
	if err := b.Eval(axeSource+"\n;0", nil); err != nil {
		return nil, fmt.Errorf("load axe-core: %w", err)
	}
	var vs []AxeViolation
	err := b.Eval(`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
id: v.id, impact: v.impact || "", help: v.help,
nodes: v.nodes.slice(0, 10).map(n => n.target.join(" ") + ": " + (n.failureSummary || "").replace(/\s+/g, " "))})))`, &vs)
	if err != nil {
		return nil, fmt.Errorf("run axe-core: %w", err)
	}
	return vs, nil
}

var toolsOnce = sync.OnceValues(installBrowserTools)

// mustBrowserTools returns the directory where the browser tests' npm
// dependencies are installed, once per test binary, by `npm ci` from the
// lock file in internal/testutil/browser into the user cache (keyed by the
// lock file's hash, so a changed pin installs anew and the source tree
// stays clean). It skips tb, saying so, where npm is missing or cannot
// install them.
func mustBrowserTools(tb testing.TB) string {
	tb.Helper()
	dir, err := toolsOnce()
	var skip skipError
	if errors.As(err, &skip) {
		tb.Skip(string(skip))
	}
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// MustAxe returns the source of axe-core (mustBrowserTools installs it).
// It skips tb, saying so, where npm is missing or cannot install it.
func MustAxe(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(mustBrowserTools(tb), "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		tb.Fatalf("read axe-core: %v", err)
	}
	return string(b)
}

// skipError says why a test cannot run here.
type skipError string

func (e skipError) Error() string { return string(e) }

func installBrowserTools() (string, error) {
	sum := sha256.Sum256(append(append([]byte{}, browserPackage...), browserLock...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "plug.directory-prober", "browser-"+hex.EncodeToString(sum[:8]))
	done := filepath.Join(dir, "node_modules", ".package-lock.json") // npm ci writes it last
	if _, err := os.Stat(done); err == nil {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", skipError("npm not installed (`make tools` installs Debian's as root): axe-core and Lighthouse cannot be installed, the pages' accessibility is not checked")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("install the browser tests' npm dependencies: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		return "", fmt.Errorf("install the browser tests' npm dependencies: %w", err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": browserPackage, "package-lock.json": browserLock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return "", fmt.Errorf("install the browser tests' npm dependencies: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", skipError(fmt.Sprintf("npm ci could not install axe-core and Lighthouse (%v): the pages' accessibility is not checked\n%.1000s", err, out))
	}
	// Another test binary may have installed them meanwhile: either copy
	// is the same pinned one.
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(done); statErr != nil {
			return "", fmt.Errorf("install the browser tests' npm dependencies: %w", err)
		}
	}
	return dir, nil
}

// LighthouseReport is what Lighthouse says of a page: each category's
// score, 0 to 1, and the audits that did not pass.
type LighthouseReport struct {
	Scores map[string]float64
	Failed []string // each audit's id, score and title
}

// Lighthouse runs Lighthouse (installed by mustBrowserTools, with
// Debian's Chromium) on a page of srv (its path under srv's root) as a
// phone, its default, for the categories accessibility, best practices
// and SEO (which has the meta description). It skips tb, saying so, where
// Chromium, node or npm is missing; it fails tb where Lighthouse does not
// run.
func Lighthouse(tb testing.TB, srv PageServer, page string) LighthouseReport {
	tb.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		tb.Skip("chromium not installed (`make tools` installs Debian's as root): Lighthouse is not run")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Skip("node not installed (`make tools` installs Debian's npm, and node with it): Lighthouse is not run")
	}
	cli := filepath.Join(mustBrowserTools(tb), "node_modules", "lighthouse", "cli", "index.js")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url := srv.URL + page
	flags := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking", "--disable-component-update"}, srv.ChromeFlags...)
	for i, f := range flags { // chrome-launcher splits its flags at spaces, unless quoted
		if k, v, ok := strings.Cut(f, "="); ok && strings.Contains(v, " ") {
			flags[i] = k + `="` + v + `"`
		}
	}
	cmd := exec.CommandContext(ctx, node, cli, url, "--quiet", "--output=json", "--output-path=stdout",
		"--only-categories=accessibility,best-practices,seo", "--chrome-flags="+strings.Join(flags, " "))
	cmd.Env = append(ChildEnv(tb), "CHROME_PATH="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("lighthouse %s: %v\n%.2000s", url, err, stderr.String())
	}
	var lhr struct {
		Categories map[string]struct {
			Score *float64 `json:"score"`
		} `json:"categories"`
		Audits map[string]struct {
			Title string   `json:"title"`
			Score *float64 `json:"score"`
			Mode  string   `json:"scoreDisplayMode"`
		} `json:"audits"`
		RuntimeError *struct {
			Message string `json:"message"`
		} `json:"runtimeError"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &lhr); err != nil {
		tb.Fatalf("lighthouse %s: its report: %v\n%.2000s", url, err, stderr.String())
	}
	if lhr.RuntimeError != nil {
		tb.Fatalf("lighthouse %s: %s", url, lhr.RuntimeError.Message)
	}
	r := LighthouseReport{Scores: map[string]float64{}}
	for name, c := range lhr.Categories {
		if c.Score != nil {
			r.Scores[name] = *c.Score
		}
	}
	for id, a := range lhr.Audits {
		if a.Score != nil && *a.Score < 1 && (a.Mode == "binary" || a.Mode == "numeric") {
			r.Failed = append(r.Failed, fmt.Sprintf("%s (%.2f): %s", id, *a.Score, a.Title))
		}
	}
	slices.Sort(r.Failed)
	return r
}

// PageServer serves the files under a directory over HTTPS on a loopback
// 127.a.b.c:8443, as pages.test, for Lighthouse, which reads pages from a
// server and marks a page not served over HTTPS.
type PageServer struct {
	URL         string   // its base URL, https://pages.test:8443/
	ChromeFlags []string // what Chromium needs to reach it: pages.test resolves to its address (every other name to nothing), its one certificate is trusted by its key
}

// ServePages serves the files under root until tb ends, with a leaf of a
// throw-away CA (MustCA).
func ServePages(tb testing.TB, root string) PageServer {
	tb.Helper()
	const name = "pages.test"
	now := time.Now()
	leaf := MustCA(tb).MustLeaf(tb, now.Add(-time.Hour), now.Add(time.Hour), name)
	cert, err := x509.ParseCertificate(leaf.Certificate[0])
	if err != nil {
		tb.Fatal(err)
	}
	spki := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	ln := ListenLoopback8443(tb)
	srv := &http.Server{Handler: http.FileServer(http.Dir(root)), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{leaf}}}
	go srv.ServeTLS(ln, "", "")
	tb.Cleanup(func() { srv.Close() })
	ip := ln.Addr().(*net.TCPAddr).IP.String()
	return PageServer{URL: "https://" + name + ":8443/", ChromeFlags: []string{
		"--host-resolver-rules=MAP " + name + " " + ip + ", MAP * ~NOTFOUND",
		"--ignore-certificate-errors-spki-list=" + base64.StdEncoding.EncodeToString(spki[:])}}
}

// Windows are the two windows every page is checked in: a phone's (390 ×
// 844, as an iPhone 14's) and a desktop's.
var Windows = []struct{ Width, Height int }{{390, 844}, {1280, 800}}

// CheckPages opens every .html file under root in each of Windows and
// fails t, in a subtest per page and window, where the page is wider than
// the window, where something on it ends past the window's edge, scrolls
// sideways inside it or is squeezed too narrow to read, where it reports
// an error (a script's, a resource that did not load), or where axe-core
// finds anything. It returns the
// pages it checked, relative to root with slashes.
func CheckPages(t *testing.T, b *Browser, axeSource, root string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".html" {
			rel, _ := filepath.Rel(root, path)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		for _, w := range Windows {
			t.Run(fmt.Sprintf("%s_at_%d_px", page, w.Width), func(t *testing.T) {
				if err := b.Open(filepath.Join(root, filepath.FromSlash(page)), w.Width, w.Height); err != nil {
					t.Fatal(err)
				}
				l, err := b.Layout(w.Width)
				if err != nil {
					t.Fatal(err)
				}
				if l.Window != w.Width { // a phone widens its window to a page wider than its viewport
					t.Errorf("the page is %d px wide: the %d px window grew to fit it", l.Window, w.Width)
				}
				if l.ScrollWidth > l.Window {
					t.Errorf("the page is %d px wide in a %d px window", l.ScrollWidth, l.Window)
				}
				for _, p := range l.Past {
					t.Errorf("past the window's edge: %s", p)
				}
				for _, s := range l.Scrolls {
					t.Errorf("a hidden sideways scroll: %s", s)
				}
				for _, s := range l.Squeezed {
					t.Errorf("text squeezed too narrow to read: %s", s)
				}
				for _, e := range b.Errors() {
					t.Errorf("the page reported an error: %s", e)
				}
				vs, err := b.Axe(axeSource)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range vs {
					t.Errorf("axe-core: %s", v)
				}
			})
		}
	}
	return pages
}
