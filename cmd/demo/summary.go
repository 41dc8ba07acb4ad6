package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"plug.directory/prober/data"
	"plug.directory/prober/data/history"
	"plug.directory/prober/data/spool"
	"plug.directory/prober/runner/fleet"
	"plug.directory/prober/site/record"
)

// row is one server in the demo's summary: what its published page says,
// what its plan and its check were.
type row struct {
	ID       string
	URL      string
	Status   data.Outcome // as published
	Label    string       // as published
	Reason   string       // as published
	Requests int          // HTTP requests of its check; 0 when not checked
	Planned  time.Time    // planned start; zero when not planned
	Due      time.Time    // when it was due
	Took     time.Duration
	Checked  bool
	Received int          // requests its fleet server received
	Want     data.Outcome // what the demo's fleet makes of it
	Why      string
}

// summarize reads what the pipeline left: each server's published file
// (record.ServerFile), the minute's plan and the results history, and what
// each fleet server received.
func summarize(ps paths, l listing, minute time.Time, fl *fleet.Fleet) ([]row, error) {
	plan, _, err := spool.ReadPlan(ps.data, minute)
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	planned := map[string]data.PlannedCheck{}
	for _, c := range plan {
		planned[c.ID] = c
	}
	history, bad, err := history.ReadHistory(ps.data, minute.Add(-24*time.Hour), minute.Add(24*time.Hour))
	if err != nil {
		return nil, fmt.Errorf("summarize: %w", err)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("summarize: read results: %w", errors.Join(bad...))
	}
	results := map[string]data.Result{}
	for _, r := range history {
		results[r.ID] = r // sorted by start: the last one stays
	}

	var rows []row
	for i, m := range l.members {
		id := l.ids[i]
		r := row{ID: id, Want: m.want, Why: m.why}
		if m.spec != nil {
			r.URL = m.spec.URL()
		}
		f, err := readServerFile(ps.site, id)
		if err != nil {
			return nil, err
		}
		r.Status, r.Label = f.Status, f.Label
		if f.Detail != nil {
			r.Reason = *f.Detail
		}
		if c, ok := planned[id]; ok {
			r.Planned, r.Due = c.At, c.Due
		}
		if res, ok := results[id]; ok {
			r.Checked, r.Requests, r.Took = true, res.Requests, res.Duration
		}
		r.Received = len(fl.Received(id))
		rows = append(rows, r)
	}
	return rows, nil
}

// readServerFile reads a server's published file, as the site build would.
func readServerFile(siteDir, id string) (record.ServerFile, error) {
	var f record.ServerFile
	path := filepath.Join(siteDir, "servers", filepath.FromSlash(id)+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("read published file: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("read published file %s: %w", path, err)
	}
	return f, nil
}

// printFleet lists the fleet: each server's address, where its host
// listens and what it shows.
func printFleet(out io.Writer, l listing, fl *fleet.Fleet) {
	fmt.Fprintf(out, "A fleet of %d MCP servers (go-sdk), TLS from a CA made now: %s\n\n", len(fl.Servers()), fl.CAFile())
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tADDRESS\tLISTENS ON\tSHOWS")
	res := fl.Resolve()
	for i, m := range l.members {
		addr, listens := "(none)", "-"
		if m.spec != nil {
			addr = m.spec.URL()
			listens = res[fmt.Sprintf("%s:%d", m.spec.Host, fleet.Port)] + fmt.Sprintf(":%d", fleet.Port)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.ids[i], addr, listens, m.why)
	}
	tw.Flush()
}

// printSummary prints the table of what each server's page says now.
func printSummary(out io.Writer, rows []row) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tLABEL\tREASON\tREQUESTS\tPLANNED\tTOOK")
	for _, r := range rows {
		planned, took, reqs := "-", "-", "-"
		if !r.Planned.IsZero() {
			planned = r.Planned.UTC().Format("15:04:05")
			if r.Planned.After(r.Due) {
				planned += fmt.Sprintf(" (due :%02d)", r.Due.UTC().Second())
			}
		}
		if r.Checked {
			took = r.Took.Round(time.Millisecond).String()
			reqs = fmt.Sprint(r.Requests)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.Label, dash(r.Reason), reqs, planned, took)
	}
	tw.Flush()
}

// printUntouched names the servers that received nothing, as a paused or
// not yet planned server must not (rule S8).
func printUntouched(out io.Writer, rows []row) {
	for _, r := range rows {
		if (r.Status == data.Paused || r.Status == data.Pending) && r.Received == 0 && r.URL != "" {
			fmt.Fprintf(out, "%s (%s) received no request at all.\n", r.ID, r.Label)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// verify reports a server whose published status is not the one its
// fleet server makes, and a status of table O that no server shows.
func verify(rows []row) error {
	var errs []error
	seen := map[data.Outcome]bool{}
	for _, r := range rows {
		seen[r.Status] = true
		if r.Status != r.Want {
			errs = append(errs, fmt.Errorf("%s shows %s (%s), want %s: %s", r.ID, r.Status, r.Reason, r.Want, r.Why))
		}
		if (r.Status == data.Paused || r.Status == data.Pending) && r.Received > 0 {
			errs = append(errs, fmt.Errorf("%s shows %s but its server received %d requests", r.ID, r.Status, r.Received))
		}
	}
	var missing []string
	for _, o := range data.Outcomes {
		if !seen[o] {
			missing = append(missing, string(o))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("statuses of table O that no server shows: %s", strings.Join(missing, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the demo did not go as it should:\n%w", err)
	}
	return nil
}
