package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// printStatus prints rep as text: a summary, then each non-empty section.
func printStatus(out io.Writer, rep *statusReport) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	printSummary(w, rep)
	printWaiting(w, rep)
	printRateLimited(w, rep)
	printTypes(w, rep.stats)
	printSchedules(w, rep)
	printSkips(w, rep)
	printDeadlines(w, rep)
	printIncidents(w, rep)
	return w.Flush()
}

// printSummary prints the lines of -status before its sections.
func printSummary(w io.Writer, rep *statusReport) {
	st := rep.stats
	fmt.Fprintf(w, "database\t%s\n", rep.Database)
	if rep.Config != nil {
		fmt.Fprintf(w, "config\t%s\n", rep.Config)
	}
	printDaemons(w, rep)
	var parts []string
	for _, s := range jobStates {
		parts = append(parts, fmt.Sprintf("%s %d", s, st.Total[s]))
	}
	fmt.Fprintf(w, "jobs\t%s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "oldest ready job\t%s\n", durationOrNone(st.OldestReady))
	if rep.RunningPools != nil {
		fmt.Fprintf(w, "running pools\t%d\n", *rep.RunningPools)
	} else {
		fmt.Fprintf(w, "running pools\tunknown (no daemon of this version has run on this file)\n")
	}
}

// printDaemons prints the daemon line, a warning when none is alive. A
// daemon's rows, one per pool, show as one daemon with its workers and pool count.
func printDaemons(w io.Writer, rep *statusReport) {
	type process struct {
		pid  int
		host string
	}
	var alive []string
	var order []process
	rows := map[process][]daemonView{}
	for _, d := range rep.Daemons {
		if d.Alive {
			p := process{d.PID, d.Host}
			if rows[p] == nil {
				order = append(order, p)
			}
			rows[p] = append(rows[p], d)
		}
	}
	for _, p := range order {
		d, pools, workers := rows[p][0], "", 0
		for _, r := range rows[p] {
			workers += r.Workers
		}
		if workers > 0 {
			pools = fmt.Sprintf(", %d workers", workers)
		}
		if n := len(rows[p]); n > 1 {
			pools += fmt.Sprintf(", %d pools", n)
		}
		config := ""
		if c := newestConfig(rows[p]); c != nil {
			config = fmt.Sprintf(", config %s", shortSHA(*c.ConfigSHA256))
		}
		alive = append(alive, fmt.Sprintf("pid %d on %s (%s%s%s), up since %s, seen %s", d.PID, d.Host, d.Version, config, pools, d.StartedAt, d.LastSeen))
	}
	switch {
	case len(alive) > 0:
		fmt.Fprintf(w, "daemons\t%d alive: %s\n", len(alive), strings.Join(alive, "; "))
	case len(rep.Daemons) > 0:
		fmt.Fprintf(w, "daemons\tWARNING: none alive; last seen %s (pid %d on %s); queued jobs wait until one starts\n",
			rep.Daemons[0].LastSeen, rep.Daemons[0].PID, rep.Daemons[0].Host)
	default:
		var loadedAt time.Time
		if rep.Config != nil {
			loadedAt = rep.Config.loadedAt
		}
		fmt.Fprintf(w, "daemons\tWARNING: none alive; %s; queued jobs wait until one starts\n", noDaemonSeen(loadedAt, rep.stats.At))
	}
	if c := rep.Configs; c != nil && c.Count > 1 {
		fmt.Fprintf(w, "configs\tWARNING: the live daemons run %d different configs; only the daemons of the newest (sha256 %s, loaded at %s) materialise instants, with its schedules and fan-out items; the others sit out until they load it\n",
			c.Count, shortSHA(*c.Ruling), *c.RulingAt)
	}
}

// newestConfig returns the row of the config a daemon loaded last, or nil.
func newestConfig(rows []daemonView) *daemonView {
	var newest *daemonView
	for i, d := range rows {
		if d.ConfigSHA256 != nil && (newest == nil || *d.ConfigLoadedAt > *newest.ConfigLoadedAt) {
			newest = &rows[i]
		}
	}
	return newest
}

// printWaiting prints the ready jobs that no running pool takes.
func printWaiting(w io.Writer, rep *statusReport) {
	if len(rep.WaitingForHandler) > 0 {
		fmt.Fprintf(w, "\nWAITING FOR A HANDLER\tREADY\tOLDEST\n")
		for _, h := range rep.WaitingForHandler {
			fmt.Fprintf(w, "%s\t%d\t%s\n", h.Type, h.Ready, msDuration(h.OldestReadyMS))
		}
	}
	if len(rep.WaitingForVersion) > 0 {
		fmt.Fprintln(w)
		for _, v := range rep.WaitingForVersion {
			verb := "wait"
			if v.Ready == 1 {
				verb = "waits"
			}
			fmt.Fprintf(w, "%s: %s of version %d %s for a worker that accepts it (running pools accept %s), the oldest for %s\n",
				v.Type, plural(v.Ready, "job"), v.Version, verb, versionList(v.Accepted), msDuration(v.OldestReadyMS))
		}
	}
}

// printRateLimited prints the tasks whose rate limit holds ready jobs.
func printRateLimited(w io.Writer, rep *statusReport) {
	if len(rep.RateLimited) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, r := range rep.RateLimited {
		limit := r.Rate
		if r.Key != "" {
			limit += " per " + r.Key
		}
		fmt.Fprintf(w, "%s: rate limit %s, %s pending, the oldest ready for %s", r.Type, limit, plural(r.Pending, "job"),
			msDuration(r.OldestReadyMS))
		if r.NextStart != nil {
			fmt.Fprintf(w, "; the next start is allowed at %s", *r.NextStart)
		}
		fmt.Fprintln(w)
	}
}

// printTypes prints the jobs of each type by state.
func printTypes(w io.Writer, st queue.Stats) {
	var types []string
	for _, m := range st.Counts {
		for t := range m {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	slices.Sort(types)
	if len(types) == 0 {
		return
	}
	fmt.Fprintf(w, "\nTYPE\tPENDING\tRUNNING\tDONE\tDEAD\tCANCELLED\n")
	for _, t := range types {
		fmt.Fprintf(w, "%s", t)
		for _, s := range jobStates {
			fmt.Fprintf(w, "\t%d", st.Counts[s][t])
		}
		fmt.Fprintln(w)
	}
}

// printSchedules prints each schedule's last, last manual and next run.
func printSchedules(w io.Writer, rep *statusReport) {
	if len(rep.Schedules) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSCHEDULE\tCRON\tLAST RUN\tOUTCOME\tLAST MANUAL RUN\tOUTCOME\tNEXT RUN\n")
	for _, s := range rep.Schedules {
		next := orDash(deref(s.NextRun))
		cron := orDash(deref(s.Cron))
		switch {
		case s.Paused:
			next = "paused"
		case !s.Configured:
			next = "not in config"
		case s.Waiting != nil:
			next = s.Waiting.String()
		case s.After != nil:
			next = "after " + *s.After
		}
		if s.After != nil {
			cron = "after " + *s.After
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, cron, orDash(deref(s.LastRun)),
			outcome(s.LastItems, s.LastStates, deref(s.LastState)),
			orDash(deref(s.LastManualRun)), outcome(s.LastManualItems, s.LastManualStates, deref(s.LastManualState)), next)
	}
}

// outcome is a run's state, or a fan-out's "3 items: 2 done, 1 dead".
func outcome(items int, states map[string]int, state string) string {
	if items <= 1 {
		return orDash(state)
	}
	var parts []string
	for _, st := range slices.Backward(stateSeverity) {
		if n := states[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return fmt.Sprintf("%d items: %s", items, strings.Join(parts, ", "))
}

// printSkips prints the schedules with a skip kept.
func printSkips(w io.Writer, rep *statusReport) {
	header := false
	for _, s := range rep.Schedules {
		if s.LastSkip == nil {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nSCHEDULE\tSKIPPED (LAST DAY)\tLAST SKIPPED INSTANT\tITEM\tREASON\n")
			header = true
		}
		n := fmt.Sprint(s.SkipsLastDay)
		if s.SkipsLastDay >= store.MaxSkipCount {
			n += "+"
		}
		item := s.LastSkip.Item
		if item == "" {
			item = "(all)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.Name, n, s.LastSkip.Instant, item, s.LastSkip.Reason)
	}
}
