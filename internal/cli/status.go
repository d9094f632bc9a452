package cli

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
)

// daemonView is a daemon's row in the pools table as -status shows it.
type daemonView struct {
	Owner     string `json:"owner"`
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	Version   string `json:"version"`
	StartedAt string `json:"started_at"`
	LastSeen  string `json:"last_seen"`
	Alive     bool   `json:"alive"`
	// The config the daemon runs and when it loaded it; null for a
	// daemon that records none (an older version, a program of its own).
	ConfigSHA256   *string `json:"config_sha256"`
	ConfigLoadedAt *string `json:"config_loaded_at"`
}

// configsView is what -status says of the configs of the live daemons.
type configsView struct {
	Count int `json:"count"` // distinct configs among them: 1 when they agree
	// Ruling is the SHA-256 of the newest, the one whose daemons
	// materialise instants; null when none records a config.
	Ruling   *string `json:"ruling_sha256"`
	RulingAt *string `json:"ruling_loaded_at"`
}

// lastSkipView is a schedule's newest skip in -status.
type lastSkipView struct {
	Instant string `json:"instant"`
	Item    string `json:"item"`
	Reason  string `json:"reason"`
}

// observeStatus adds to rep what -status shows beyond counts: the daemons
// and whether one is alive, each schedule's last instant summed over its
// fan-out items, and its skips of the last day. Every read is bounded: one
// range of an index per schedule.
func (a *app) observeStatus(ctx context.Context, q *queue.Client, rep *statusReport) error {
	now := q.Clock().Now()
	ds, err := q.Pools(ctx)
	if err != nil {
		return err
	}
	rep.Daemons = []daemonView{}
	for _, d := range ds {
		alive := d.Alive(now)
		v := daemonView{Owner: d.Owner, PID: d.PID, Host: d.Host, Version: d.Version,
			StartedAt: rfc3339(d.StartedAt, time.UTC), LastSeen: rfc3339(d.LastSeen, time.UTC), Alive: alive}
		if d.Config != "" {
			v.ConfigSHA256, v.ConfigLoadedAt = ptr(d.Config), ptr(rfc3339(d.ConfigAt, time.UTC))
		}
		rep.Daemons = append(rep.Daemons, v)
		rep.DaemonAlive = rep.DaemonAlive || alive
	}
	ag := schedule.Agree(ds, queue.Process{}, now)
	rep.Configs = &configsView{Count: ag.Configs}
	if ag.Ruling != "" {
		rep.Configs.Ruling, rep.Configs.RulingAt = ptr(ag.Ruling), ptr(rfc3339(ag.RulingAt, time.UTC))
	}
	for i := range rep.Schedules {
		ss := &rep.Schedules[i]
		loc := a.zone(ss.Name)
		if ss.last != nil {
			// The instant as stored, to the millisecond: LastRun is printed
			// to the second.
			o, err := q.Instant(ctx, ss.Name, ss.last.ScheduledAt)
			if err != nil {
				return err
			}
			ss.LastItems, ss.LastStates = o.Jobs, stateCounts(o)
			if o.Jobs > 0 {
				ss.LastState = ptr(string(worstState(o.States)))
			}
		}
		if ss.lastManual != nil {
			if err := a.observeManual(ctx, q, ss); err != nil {
				return err
			}
		}
		if err := a.observeDeadline(ctx, q, ss); err != nil {
			return err
		}
		sum, err := q.SkipSummary(ctx, ss.Name, now.Add(-24*time.Hour))
		if err != nil {
			return err
		}
		ss.SkipsLastDay = sum.Count
		if sum.Last != nil {
			ss.LastSkip = &lastSkipView{Instant: rfc3339(sum.Last.ScheduledAt, loc), Item: sum.Last.Item, Reason: string(sum.Last.Reason)}
		}
	}
	return nil
}

// stateSeverity orders states from the one an operator must see first: an
// instant with one dead item is dead, whatever its other items did.
var stateSeverity = []queue.State{queue.StateDead, queue.StateRunning, queue.StatePending, queue.StateCancelled, queue.StateDone}

// stateCounts are o's jobs by state, as -status prints them.
func stateCounts(o store.InstantOutcome) map[string]int {
	m := map[string]int{}
	for st, n := range o.States {
		m[string(st)] = n
	}
	return m
}

func worstState(m map[queue.State]int) queue.State {
	for _, st := range stateSeverity {
		if m[st] > 0 {
			return st
		}
	}
	return ""
}

// observeManual sums the schedule's last manual run over its items: the
// jobs of one -trigger are the newest of the schedule's manual jobs up to
// LastManualJobID whose keys end alike ("|manual|KEY"), as many as it has
// items (see Store.Run).
func (a *app) observeManual(ctx context.Context, q *queue.Client, ss *scheduleStatus) error {
	j := ss.lastManual
	prefix := j.Schedule + "|" + j.Item
	if !strings.HasPrefix(j.Key, prefix+"|") {
		return nil // not a key -trigger made: the one job stands alone
	}
	span := 1
	if a.cfg != nil {
		if s, ok := a.cfg.Schedule(ss.Name); ok {
			span = len(s.Items())
		}
	}
	o, err := q.ManualRun(ctx, ss.Name, j.ID, span, j.Key[len(prefix):])
	if err != nil {
		return err
	}
	ss.LastManualItems, ss.LastManualStates = o.Jobs, stateCounts(o)
	if o.Jobs > 0 {
		ss.LastManualState = ptr(string(worstState(o.States)))
	}
	return nil
}

// outcome is an OUTCOME column of -status: a run's state, or for a fan-out
// the count of items in each state ("3 items: 2 done, 1 dead").
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

// printDaemons prints the daemon line of -status, a warning when none is
// alive. A daemon with [pools.NAME] tables has a row per pool: it is one
// daemon, with its count of pools.
func printDaemons(w io.Writer, rep statusReport) {
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
		d, pools := rows[p][0], ""
		if n := len(rows[p]); n > 1 {
			pools = fmt.Sprintf(", %d pools", n)
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
		fmt.Fprintf(w, "daemons\tWARNING: none alive; no daemon has run on this database since it stopped cleanly, or ever; queued jobs wait until one starts\n")
	}
	if c := rep.Configs; c != nil && c.Count > 1 {
		fmt.Fprintf(w, "configs\tWARNING: the live daemons run %d different configs; only the daemons of the newest (sha256 %s, loaded at %s) materialise instants, with its schedules and fan-out items; the others sit out until they load it\n",
			c.Count, shortSHA(*c.Ruling), *c.RulingAt)
	}
}

// newestConfig returns the row of one daemon's rows that records the
// config it loaded last; nil when none records one.
func newestConfig(rows []daemonView) *daemonView {
	var newest *daemonView
	for i, d := range rows {
		if d.ConfigSHA256 != nil && (newest == nil || *d.ConfigLoadedAt > *newest.ConfigLoadedAt) {
			newest = &rows[i]
		}
	}
	return newest
}

// printSkips prints the skips section of -status: the schedules with a
// skip kept.
func printSkips(w io.Writer, rep statusReport) {
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

// warnNoDaemon prints, after a -trigger, a warning when no daemon is alive
// to run what it queued. The trigger is committed by then: a failure to
// look is a warning too, never the command's error.
func (a *app) warnNoDaemon(ctx context.Context, q *queue.Client) error {
	ds, err := q.Pools(ctx)
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: queued; could not tell whether a daemon is running: %v\n", err)
		return nil
	}
	now := q.Clock().Now()
	for _, d := range ds {
		if d.Alive(now) {
			return nil
		}
	}
	if len(ds) == 0 {
		fmt.Fprintf(a.stderr, "warning: queued; no daemon is running on %s (none has been seen); it will run when one starts\n", a.dbPath)
		return nil
	}
	fmt.Fprintf(a.stderr, "warning: queued; no daemon has been seen since %s (pid %d on %s); it will run when one starts\n",
		rfc3339(ds[0].LastSeen, time.UTC), ds[0].PID, ds[0].Host)
	return nil
}

// programVersion is the version the daemon records in its pool's row.
func (a *app) programVersion() string {
	info, ok := debug.ReadBuildInfo()
	return buildVersion(a.opts.Version, info, ok)
}
