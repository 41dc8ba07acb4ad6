package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"plug.directory/prober/cmd/internal/cli"
	"plug.directory/prober/data"
	"plug.directory/prober/data/lists"
	"plug.directory/prober/pause"
)

// errRejected means a checked pull request is not acceptable; its verdict
// has been printed, so the command exits 1 saying nothing more.
var errRejected = cli.Exit(cli.ExitFailure, nil)

func main() { cli.Main("pause", run) }

// config is the command line.
type config struct {
	API     string        // GitHub REST API base URL
	Repo    string        // OWNER/REPO holding the paused list
	Path    string        // the paused list in the repository
	Base    string        // branch pause requests target
	Server  string        // open: the id or address to pause
	Note    string        // open: who asked and how
	Servers string        // the ranked list CSV; required to check
	CheckPR int           // check this pull request instead of opening one
	Timeout time.Duration // for the whole command
}

// Validate reports the first missing or conflicting flag.
func (c config) Validate() error {
	switch {
	case c.Repo == "":
		return errors.New("-repo OWNER/REPO is required")
	case c.Path == "":
		return errors.New("-path FILE is required")
	case c.CheckPR < 0:
		return errors.New("-check-pr must be a pull request number")
	case c.CheckPR > 0 && c.Servers == "":
		return errors.New("-check-pr needs -servers, the ranked list its lines must name")
	case c.CheckPR > 0 && (c.Server != "" || c.Note != ""):
		return errors.New("-check-pr does not take -server or -note")
	case c.CheckPR == 0 && c.Server == "":
		return errors.New("-server ID is required to open a pause request (or -check-pr N to check one)")
	case c.Timeout <= 0:
		return errors.New("-timeout must be positive")
	}
	_, _, err := pause.SplitRepo(c.Repo)
	return err
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pause", flag.ContinueOnError)
	cfg := config{}
	fs.StringVar(&cfg.API, "api", pause.DefaultAPI, "GitHub REST API base URL (GitHub Enterprise: https://HOST/api/v3/)")
	fs.StringVar(&cfg.Repo, "repo", "", "`OWNER/REPO` holding the paused list")
	fs.StringVar(&cfg.Path, "path", "", "the paused list's `FILE` in the repository")
	fs.StringVar(&cfg.Base, "base", pause.DefaultBase, "`branch` pause requests target")
	fs.StringVar(&cfg.Server, "server", "", "server `ID` or address to pause")
	fs.StringVar(&cfg.Note, "note", "", "who asked and how (public: no email addresses)")
	fs.StringVar(&cfg.Servers, "servers", "", "ranked list `CSV` (id,rank,url,added); required with -check-pr")
	fs.IntVar(&cfg.CheckPR, "check-pr", 0, "check pull request `N` instead of opening one")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Minute, "give up after this long")
	usage := "usage: pause -repo OWNER/REPO -path FILE -server ID [-note TEXT] [-base BRANCH] [-api URL] [-timeout D]\n" +
		"       pause -repo OWNER/REPO -path FILE -check-pr N -servers CSV [-base BRANCH] [-api URL] [-timeout D]"
	if err := cli.ParseMode(fs, args, stdout, stderr, usage, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	client, err := pause.NewClient(cfg.API, os.Getenv(pause.TokenEnv), nil)
	if err != nil {
		return err
	}
	owner, name, _ := pause.SplitRepo(cfg.Repo)
	repo := &pause.Repo{Client: client, Owner: owner, Name: name, Path: cfg.Path, Logger: logger}

	var servers []data.Server
	if cfg.Servers != "" {
		var bad []error
		servers, bad, err = lists.ReadServers(cfg.Servers)
		if err != nil {
			return err
		}
		for _, b := range bad {
			logger.Warn("ranked list row skipped", "err", b)
		}
	}

	if cfg.CheckPR > 0 {
		v, err := repo.CheckPullRequest(ctx, cfg.CheckPR, servers)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, v)
		if !v.OK() {
			return errRejected
		}
		return nil
	}
	op, err := repo.OpenRequest(ctx, pause.Request{Server: cfg.Server, Note: cfg.Note, Base: cfg.Base, Servers: servers})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "opened pull request #%d: %s\nbranch: %s\nline: %s\n", op.Number, op.URL, op.Branch, op.Line)
	return nil
}
