// Command hugo builds the example site from a published site: the
// directory's index and a page per server, rendered by Hugo (0.111, as
// Debian ships it) from the JSON the prober publishes, with no special case
// for it.
//
//	go run ./examples/hugo -site demo-out/site -out demo-out/hugo
//
// Hugo 0.111 makes pages only from content files, so the build writes one
// stub per row of the index (content/servers/<id>.md, its front matter
// the id); everything the pages say comes from the JSON, mounted as the
// site's data (servers/<id>.json is .Site.Data.servers.<id>; index.json
// is .Site.Data.index and each of its parts, index/<hash>.json, is
// .Site.Data.index.<hash> beside it), and the standalone strips as static
// files.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"plug.directory/prober/site"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hugo example:", err)
		os.Exit(1)
	}
}

// config is what one build takes.
type config struct {
	Site   string // the published site: index.json, servers/, badges-strip/
	Out    string // where Hugo writes the HTML
	Source string // the Hugo project: hugo.toml and layouts/
	Hugo   string // the hugo command
}

// run parses the flags and builds the site.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hugo example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.Site, "site", "demo-out/site", "the published site `DIR` (publish -out)")
	fs.StringVar(&c.Out, "out", "demo-out/hugo", "`DIR` where Hugo writes the built site")
	fs.StringVar(&c.Source, "source", "examples/hugo", "the Hugo project `DIR`")
	fs.StringVar(&c.Hugo, "hugo", "hugo", "the hugo `COMMAND`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return build(ctx, c, stdout, stderr)
}

// build writes the content stubs and Hugo's mounts into a work directory
// of its own, then runs Hugo; the work directory is removed after.
func build(ctx context.Context, c config, stdout, stderr io.Writer) error {
	site, err := filepath.Abs(c.Site)
	if err != nil {
		return fmt.Errorf("build example site: %w", err)
	}
	ids, err := serverIDs(site)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "hugo-example-")
	if err != nil {
		return fmt.Errorf("build example site: %w", err)
	}
	defer os.RemoveAll(work)
	content := filepath.Join(work, "content")
	for _, id := range ids {
		if err := writeStub(content, id); err != nil {
			return err
		}
	}
	mounts := filepath.Join(work, "mounts.toml")
	if err := os.WriteFile(mounts, []byte(mountsTOML(site, content)), 0o644); err != nil {
		return fmt.Errorf("build example site: %w", err)
	}
	out, err := filepath.Abs(c.Out)
	if err != nil {
		return fmt.Errorf("build example site: %w", err)
	}
	cmd := exec.CommandContext(ctx, c.Hugo, "--source", c.Source, "--config", "hugo.toml,"+mounts, "--destination", out,
		"--cleanDestinationDir", "--cacheDir", filepath.Join(work, "cache"), "--quiet")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("run %s: %w", c.Hugo, err)
	}
	return nil
}

// serverIDs returns the ids of the rows of the site's index: index.json
// and its parts composed (site.ReadIndex), in id order.
func serverIDs(dir string) ([]string, error) {
	index, err := site.ReadIndex(dir)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(index.Rows))
	for _, r := range index.Rows {
		if r.ID == "" || strings.Contains(r.ID, "..") || strings.HasPrefix(r.ID, "/") {
			return nil, fmt.Errorf("read index of %s: a row's id %q cannot name a page", dir, r.ID)
		}
		ids = append(ids, r.ID)
	}
	return ids, nil
}

// writeStub writes content/servers/<id>.md: front matter naming the
// server, for its page to look its file up by.
func writeStub(content, id string) error {
	path := filepath.Join(content, "servers", filepath.FromSlash(id)+".md")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write page of %s: %w", id, err)
	}
	fm, err := json.Marshal(map[string]string{"id": id, "title": id}) // JSON front matter
	if err != nil {
		return fmt.Errorf("write page of %s: %w", id, err)
	}
	if err := os.WriteFile(path, append(fm, '\n'), 0o644); err != nil {
		return fmt.Errorf("write page of %s: %w", id, err)
	}
	return nil
}

// mountsTOML returns Hugo's mounts: the project's layouts, the published
// site's JSON as data and its standalone strips as static files, and the
// stubs as content.
func mountsTOML(site, content string) string {
	var b strings.Builder
	for _, m := range []struct{ source, target, include string }{
		{"layouts", "layouts", ""},
		{site, "data", `["*.json", "**/*.json"]`}, // "**.json" alone misses the files of subdirectories in Hugo 0.111
		{filepath.Join(site, "badges-strip"), "static/badges-strip", ""},
		{content, "content", ""},
	} {
		fmt.Fprintf(&b, "[[module.mounts]]\nsource = %s\ntarget = %q\n", strconv.Quote(m.source), m.target)
		if m.include != "" {
			fmt.Fprintf(&b, "includeFiles = %s\n", m.include)
		}
	}
	return b.String()
}
