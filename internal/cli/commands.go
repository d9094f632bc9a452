package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
)

// openQueue opens the database for a subcommand. No subcommand creates a
// database file: only the daemon does, so that a command run as root
// before the service's first start cannot leave a database the service's
// user cannot open (a PostgreSQL database is there or not).
func (a *app) openQueue(ctx context.Context, write bool) (*queue.Client, error) {
	if !isDSN(a.db) {
		_, err := os.Stat(a.db)
		switch {
		case write && errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("database %s does not exist yet: start the daemon first (only the daemon creates its database, so that it owns it)", a.dbPath)
		case err != nil:
			return nil, fmt.Errorf("database %s: %w (has the daemon run with this config?)", a.dbPath, err)
		}
	}
	return openDatabase(ctx, a.db, engine.Config{Clock: a.clock, Logger: a.log, ReadOnly: !write, WriteWait: a.o.wait})
}

func (a *app) schedule(name string) (*schedule.Schedule, error) {
	s, ok := a.cfg.Schedule(name)
	if !ok {
		return nil, usagef("%s: no schedule named %q (have: %s)", a.o.config, name, strings.Join(a.scheduleNames(), ", "))
	}
	return s, nil
}

func (a *app) scheduleNames() []string {
	var names []string
	for _, s := range a.cfg.Schedules {
		names = append(names, s.Name)
	}
	return names
}

// rfc3339 formats t in loc with its offset, or "-" for the zero time.
func rfc3339(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.RFC3339)
}

func (a *app) checkConfig() error {
	reg, err := a.registry()
	if err != nil {
		return err
	}
	if err := checkHandlers(reg, a.cfg); err != nil {
		printConfigErrors(a.stderr, err, "")
		return &usageError{ErrReported}
	}
	for _, e := range a.cfg.Warnings {
		fmt.Fprintln(a.stderr, "warning:", e)
	}
	if err := a.checkCommands(); err != nil {
		return err
	}
	// What else the daemon's start would fail on, found without side
	// effects: the environment systemd gives it, and the database.
	if _, err := watchdogInterval(getenv); err != nil {
		return usagef("%v", err)
	}
	if err := a.checkDatabase(); err != nil {
		return usagef("%v", err)
	}
	now := a.clock.Now()
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "SCHEDULE\tCRON\tZONE\tTASK\tITEMS\tNEXT RUN\n")
	for _, s := range a.cfg.Schedules {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, s.Cron, s.Location, s.Task, len(s.Items()), rfc3339(s.Next(now), s.Location))
	}
	w.Flush()
	printBudgets(a.stdout, a.cfg)
	printRedaction(a.stdout, a.cfg)
	printPools(a.stdout, a.cfg)
	printHTTP(a.stdout, a.cfg.HTTP)
	fmt.Fprintf(a.stdout, "%s: ok, %s, %s, database %s\n", a.o.config,
		plural(len(a.cfg.Schedules), "schedule"), plural(len(a.cfg.Tasks), "task"), a.dbPath)
	return nil
}

// configOutcome is what the summary of a bad config's problems adds: -check
// only reports, any other command did nothing.
func configOutcome(o *options) string {
	if o.mode == "check" {
		return ""
	}
	return "; nothing was done"
}

// problemCount says how many problems es holds, such as "2 problems in
// schedules.toml"; a list cut short at schedule.MaxConfigErrors says "more
// than".
func problemCount(es schedule.ConfigErrors) string {
	n, more := len(es), ""
	for _, e := range es {
		if errors.Is(e, schedule.ErrTooManyProblems) {
			n--
			more = "more than "
		}
	}
	file := ""
	if len(es) > 0 && es[0].File != "" {
		file = " in " + es[0].File
	}
	return more + plural(n, "problem") + file
}

// versionList is vs as "1", "1 and 2" or "1, 2 and 3".
func versionList(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// plural returns "1 task" or "n tasks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func (a *app) triggerRun(ctx context.Context) error {
	if _, err := a.schedule(a.o.trigger); err != nil {
		return err
	}
	var payload json.RawMessage
	if a.o.payload != "" {
		text, err := a.payloadArg()
		if err != nil {
			return err
		}
		// Checked before it is decoded: the decoder's cost grows with the
		// payload's depth.
		if err := queue.CheckPayload(text); err != nil && !errors.Is(err, queue.ErrPayloadNotJSON) {
			return usagef("-payload: %v", err)
		}
		var obj map[string]any
		if err := json.Unmarshal(text, &obj); err != nil {
			return usagef("-payload: not a JSON object: %v", err)
		}
		payload = text
	}
	opts := schedule.TriggerOptions{Payload: payload, Key: a.o.key, Item: a.o.item, Now: a.clock.Now()}
	if err := schedule.CheckTrigger(a.cfg, a.o.trigger, opts); err != nil {
		if errors.Is(err, schedule.ErrUnknownItem) || errors.Is(err, schedule.ErrPayloadSetsItemKey) {
			return usagef("%v", err)
		}
		return err
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	opts.Now = q.Clock().Now() // the store's clock: on PostgreSQL, the server's
	res, err := schedule.Trigger(ctx, q, a.cfg, a.o.trigger, opts)
	if err != nil {
		return err
	}
	inserted := 0
	for _, r := range res {
		if r.Inserted {
			inserted++
			fmt.Fprintf(a.stdout, "enqueued job %d (key %s)\n", r.ID, r.Key)
		} else {
			fmt.Fprintf(a.stdout, "key %s already used by job %d: nothing enqueued\n", r.Key, r.ID)
		}
	}
	if inserted == 0 && len(res) > 0 {
		fmt.Fprintf(a.stdout, "trigger key %q was used before: nothing enqueued\n", a.o.key)
	}
	return a.warnNoDaemon(ctx, q)
}

// statusReport is what -status prints. A value that does not exist (no job
// waiting, a schedule never run, a paused schedule's next run) is null in
// JSON, never 0 or "".
type statusReport struct {
	Database      string                    `json:"database"`
	At            string                    `json:"at"`
	Counts        map[string]map[string]int `json:"counts"` // state -> type -> jobs
	Totals        map[string]int            `json:"totals"`
	OldestReadyMS *int64                    `json:"oldest_ready_ms"` // null: none waiting
	Dead          int                       `json:"dead"`
	// RunningPools counts the daemons' worker pools; nil when the file
	// predates their record.
	RunningPools *int `json:"running_pools"`
	// WaitingForHandler lists the types with ready jobs that no running
	// pool has a handler for.
	WaitingForHandler []waitingStatus `json:"waiting_for_handler"`
	// WaitingForVersion lists, by type and version, the ready jobs of a
	// type that running pools have a handler for but of a payload version
	// that none of them accepts.
	WaitingForVersion []versionWaitStatus `json:"waiting_for_version"`
	RateLimited       []rateStatus        `json:"rate_limited"`
	Schedules         []scheduleStatus    `json:"schedules"`
	Config            *configReport       `json:"config,omitempty"` // the config the daemon runs
	Daemons           []daemonView        `json:"daemons"`          // pool rows, most recently seen first
	DaemonAlive       bool                `json:"daemon_alive"`     // a daemon was seen within store.AliveWithin
	Configs           *configsView        `json:"configs"`          // the configs of the live daemons
}

type waitingStatus struct {
	Type          string `json:"type"`
	Ready         int    `json:"ready"`
	OldestReadyMS int64  `json:"oldest_ready_ms"`
}

type versionWaitStatus struct {
	Type          string `json:"type"`
	Version       int    `json:"version"`
	Accepted      []int  `json:"accepted"` // the versions of Type the running pools accept
	Ready         int    `json:"ready"`
	OldestReadyMS int64  `json:"oldest_ready_ms"`
}

// rateStatus is a task with a rate limit that has jobs ready to run.
type rateStatus struct {
	Type          string `json:"type"`
	Rate          string `json:"rate"`          // "10/1m"
	Key           string `json:"key,omitempty"` // the task's rate_key: a limit per value
	Pending       int    `json:"pending"`
	OldestReadyMS int64  `json:"oldest_ready_ms"`
	// NextStart is when the limit of a task without a key allows its next
	// start, while it holds its jobs back; null when it allows one now, or
	// the limit is per key.
	NextStart *string `json:"next_start"`
}

type scheduleStatus struct {
	Name       string  `json:"name"`
	Cron       *string `json:"cron"` // null: not in the config
	Zone       *string `json:"zone"` // null: not in the config
	Paused     bool    `json:"paused"`
	LastRun    *string `json:"last_run"` // null: never run
	LastState  *string `json:"last_state"`
	LastJobID  *int64  `json:"last_job_id"`
	NextRun    *string `json:"next_run"` // null: paused or not in the config
	Configured bool    `json:"configured"`

	// The newest manual run (-trigger), at the time it was enqueued; null
	// when the schedule was never triggered.
	LastManualRun   *string `json:"last_manual_run"`
	LastManualState *string `json:"last_manual_state"`
	LastManualJobID *int64  `json:"last_manual_job_id"`

	// The last instant's fan-out: its jobs and how many are in each state.
	// LastState is then the most severe of them (dead, running, pending,
	// cancelled, done).
	LastItems  int            `json:"last_items,omitempty"`
	LastStates map[string]int `json:"last_states,omitempty"`
	// The same for the last manual run.
	LastManualItems  int            `json:"last_manual_items,omitempty"`
	LastManualStates map[string]int `json:"last_manual_states,omitempty"`
	// last and lastManual are the jobs behind LastJobID and
	// LastManualJobID, as read with the others: observeStatus sums their
	// instants without reading them again.
	last, lastManual *queue.Job
	// Skipped instants in the last day (at most store.MaxSkipCount), and
	// the newest skip kept.
	SkipsLastDay int           `json:"skips_last_day"`
	LastSkip     *lastSkipView `json:"last_skip,omitempty"`
	// DeadlineState is "on time", "late", "missed" or "recovered" for a
	// schedule with a start_within or deadline (see deadlineState); empty
	// otherwise. LastAlarm is its newest alarm.
	DeadlineState string         `json:"deadline_state,omitempty"`
	LastAlarm     *lastAlarmView `json:"last_alarm,omitempty"`
}

// rateStatus lists the configured tasks with a rate limit that have jobs
// ready to run, with when the limit of one without a key allows its next
// start (one read of its bucket each).
func (a *app) rateStatus(ctx context.Context, q *queue.Client, st queue.Stats) ([]rateStatus, error) {
	out := []rateStatus{}
	if a.cfg == nil {
		return out, nil
	}
	for _, name := range taskNames(a.cfg) {
		t := a.cfg.Tasks[name]
		since, ready := st.ReadySince[name]
		if t.Rate == 0 || !ready {
			continue
		}
		r := rateStatus{Type: name, Rate: fmt.Sprintf("%d/%s", t.Rate, queue.ShortDuration(t.RatePer)), Key: t.RateKey,
			Pending: st.Counts[queue.StatePending][name], OldestReadyMS: st.At.Sub(since).Milliseconds()}
		if t.RateKey == "" {
			next, _, err := q.RateNextStart(ctx, name, t.TypeConfig().Rate, nil)
			if err != nil {
				return nil, err
			}
			if next.After(st.At) {
				r.NextStart = ptr(rfc3339(next, a.cfg.Scheduler.Timezone))
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// ptr returns a pointer to v, for a JSON value that may be null.
func ptr[T any](v T) *T { return &v }

func (a *app) showStatus(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	last, err := q.LastRuns(ctx)
	if err != nil {
		return err
	}
	manual, err := q.LastManualRuns(ctx)
	if err != nil {
		return err
	}
	// LastRuns falls back to a manual run for a schedule with no instant's
	// job; that one shows as the manual run only.
	for name, j := range last {
		if j.ScheduledAt.IsZero() {
			delete(last, name)
		}
	}
	cursors, err := q.Cursors(ctx)
	if err != nil {
		return err
	}
	rep := statusReport{
		Database: a.dbPath, At: rfc3339(st.At, time.UTC), Counts: map[string]map[string]int{},
		Totals: map[string]int{}, Dead: st.Dead,
	}
	if st.OldestReady > 0 {
		rep.OldestReadyMS = ptr(st.OldestReady.Milliseconds())
	}
	if rep.Config, err = a.configStatus(ctx, q); err != nil {
		return err
	}
	for s, m := range st.Counts {
		rep.Counts[string(s)] = m
	}
	for s, n := range st.Total {
		rep.Totals[string(s)] = n
	}
	hs, err := q.Unhandled(ctx)
	if err != nil {
		return err
	}
	rep.WaitingForHandler = []waitingStatus{}
	rep.WaitingForVersion = []versionWaitStatus{}
	if hs.Known {
		rep.RunningPools = &hs.Pools
		for _, w := range hs.Waiting {
			if w.Version != 0 {
				rep.WaitingForVersion = append(rep.WaitingForVersion, versionWaitStatus{Type: w.Type, Version: w.Version,
					Accepted: w.Accepted, Ready: w.Ready, OldestReadyMS: w.Oldest.Milliseconds()})
				continue
			}
			rep.WaitingForHandler = append(rep.WaitingForHandler, waitingStatus{Type: w.Type, Ready: w.Ready, OldestReadyMS: w.Oldest.Milliseconds()})
		}
	}
	if rep.RateLimited, err = a.rateStatus(ctx, q, st); err != nil {
		return err
	}
	seen := map[string]bool{}
	if a.cfg != nil {
		for _, s := range a.cfg.Schedules {
			seen[s.Name] = true
			ss := scheduleStatus{Name: s.Name, Cron: ptr(s.Cron), Zone: ptr(s.Location.String()), Configured: true, Paused: cursors[s.Name].Paused}
			if !ss.Paused {
				if next := a.nextRun(s, cursors); next != "-" {
					ss.NextRun = ptr(next)
				}
			}
			ss.setLast(last[s.Name], manual[s.Name], s.Location)
			rep.Schedules = append(rep.Schedules, ss)
		}
	}
	var gone []string
	for name := range last {
		gone = append(gone, name)
	}
	for name := range manual {
		gone = append(gone, name)
	}
	slices.Sort(gone)
	for _, name := range slices.Compact(gone) {
		if !seen[name] {
			ss := scheduleStatus{Name: name, Paused: cursors[name].Paused}
			ss.setLast(last[name], manual[name], time.UTC)
			rep.Schedules = append(rep.Schedules, ss)
		}
	}
	if err := a.observeStatus(ctx, q, &rep); err != nil {
		return err
	}
	if a.o.json {
		return writeJSON(a.stdout, rep)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "database\t%s\n", rep.Database)
	if rep.Config != nil {
		fmt.Fprintf(w, "config\t%s\n", rep.Config)
	}
	printDaemons(w, rep)
	states := []queue.State{queue.StatePending, queue.StateRunning, queue.StateDone, queue.StateDead, queue.StateCancelled}
	var parts []string
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s %d", s, st.Total[s]))
	}
	fmt.Fprintf(w, "jobs\t%s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "oldest ready job\t%s\n", durationOrNone(st.OldestReady))
	if rep.RunningPools != nil {
		fmt.Fprintf(w, "running pools\t%d\n", *rep.RunningPools)
	} else {
		fmt.Fprintf(w, "running pools\tunknown (no daemon of this version has run on this file)\n")
	}
	if len(rep.WaitingForHandler) > 0 {
		fmt.Fprintf(w, "\nWAITING FOR A HANDLER\tREADY\tOLDEST\n")
		for _, h := range rep.WaitingForHandler {
			fmt.Fprintf(w, "%s\t%d\t%s\n", h.Type, h.Ready, (time.Duration(h.OldestReadyMS) * time.Millisecond).String())
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
				v.Type, plural(v.Ready, "job"), v.Version, verb, versionList(v.Accepted),
				(time.Duration(v.OldestReadyMS) * time.Millisecond).String())
		}
	}
	if len(rep.RateLimited) > 0 {
		fmt.Fprintln(w)
		for _, r := range rep.RateLimited {
			limit := r.Rate
			if r.Key != "" {
				limit += " per " + r.Key
			}
			fmt.Fprintf(w, "%s: rate limit %s, %s pending, the oldest ready for %s", r.Type, limit, plural(r.Pending, "job"),
				(time.Duration(r.OldestReadyMS) * time.Millisecond).String())
			if r.NextStart != nil {
				fmt.Fprintf(w, "; the next start is allowed at %s", *r.NextStart)
			}
			fmt.Fprintln(w)
		}
	}
	var types []string
	for _, m := range st.Counts {
		for t := range m {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	slices.Sort(types)
	if len(types) > 0 {
		fmt.Fprintf(w, "\nTYPE\tPENDING\tRUNNING\tDONE\tDEAD\tCANCELLED\n")
		for _, t := range types {
			fmt.Fprintf(w, "%s", t)
			for _, s := range states {
				fmt.Fprintf(w, "\t%d", st.Counts[s][t])
			}
			fmt.Fprintln(w)
		}
	}
	if len(rep.Schedules) > 0 {
		fmt.Fprintf(w, "\nSCHEDULE\tCRON\tLAST RUN\tOUTCOME\tLAST MANUAL RUN\tOUTCOME\tNEXT RUN\n")
		for _, s := range rep.Schedules {
			next := orDash(deref(s.NextRun))
			if s.Paused {
				next = "paused"
			} else if !s.Configured {
				next = "not in config"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, orDash(deref(s.Cron)), orDash(deref(s.LastRun)), outcome(s.LastItems, s.LastStates, deref(s.LastState)),
				orDash(deref(s.LastManualRun)), outcome(s.LastManualItems, s.LastManualStates, deref(s.LastManualState)), next)
		}
	}
	printSkips(w, rep)
	printDeadlines(w, rep)
	return w.Flush()
}

// setLast fills the last scheduled run from last, the job of the newest
// instant, and the last manual run from manual, either of them nil.
func (ss *scheduleStatus) setLast(last, manual *queue.Job, loc *time.Location) {
	ss.last, ss.lastManual = last, manual
	if last != nil {
		ss.LastRun, ss.LastState, ss.LastJobID = ptr(rfc3339(last.ScheduledAt, loc)), ptr(string(last.State)), ptr(last.ID)
	}
	if manual != nil {
		ss.LastManualRun, ss.LastManualState, ss.LastManualJobID = ptr(rfc3339(manual.CreatedAt, loc)), ptr(string(manual.State)), ptr(manual.ID)
	}
}

// nextRun is the next run of s as the beat will see it: "@every" runs are
// counted from the schedule's cursor.
func (a *app) nextRun(s *schedule.Schedule, cursors map[string]store.Cursor) string {
	opts := schedule.NextOptions{From: a.clock.Now()}
	if cur, ok := cursors[s.Name]; ok {
		opts.Cursor = cur.At
		if cur.At.After(opts.From) {
			opts.From = cur.At
		}
	}
	runs, err := schedule.NextRuns(a.cfg, s.Name, 1, opts)
	if err != nil || len(runs) == 0 {
		return "-"
	}
	return instant(runs[0].At, s.Location)
}

func durationOrNone(d time.Duration) string {
	if d <= 0 {
		return "none waiting"
	}
	return d.Round(time.Millisecond).String()
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// logConfigWarnings logs what in cfg is probably a mistake but loads.
func logConfigWarnings(log *slog.Logger, cfg *schedule.Config) {
	for _, e := range cfg.Warnings {
		log.Warn("config warning", "file", e.File, "line", e.Line, "schedule", e.Job, "field", e.Field, "warning", e.Err.Error())
	}
}

// nextView is a run as -next -json prints it.
type nextView struct {
	At   string `json:"at"`
	DST  string `json:"dst,omitempty"`  // "moved" or "folded"
	Note string `json:"note,omitempty"` // what the daylight-saving rule did
}

// instant formats t in loc as RFC 3339 with the fraction of a second when
// it has one: "@every" runs keep the fraction of their cursor.
func instant(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(time.RFC3339Nano)
}

// parseFrom reads -from for -next: RFC 3339, or a wall time in loc written
// YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS.
func parseFrom(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("-from %q: want RFC 3339 (2026-11-01T00:00:00-04:00), or 2026-11-01 or 2026-11-01T01:30 in the schedule's zone (%s)", s, loc)
}

// showNext prints the next runs of a schedule: after now, or at or after
// -from. "@every" runs are counted from the schedule's cursor in the
// database, as the beat counts them.
func (a *app) showNext(ctx context.Context) error {
	s, err := a.schedule(a.o.next)
	if err != nil {
		return err
	}
	now := a.clock.Now()
	opts := schedule.NextOptions{From: now}
	if a.o.from != "" {
		from, err := parseFrom(a.o.from, s.Location)
		if err != nil {
			return err
		}
		opts.From = from.Add(-time.Nanosecond) // runs at or after -from
	}
	counted := "now"
	if a.o.from != "" {
		counted = "-from"
	}
	if _, err := os.Stat(a.db); err != nil && !isDSN(a.db) {
		if s.Spec().Every() > 0 {
			fmt.Fprintf(a.stderr, "no database at %s: @every runs are counted from %s, not from the schedule's cursor\n", a.dbPath, counted)
		}
	} else {
		q, err := a.openQueue(ctx, false)
		if err != nil {
			return err
		}
		cursors, err := q.Cursors(ctx)
		q.Close()
		if err != nil {
			return err
		}
		cur, ok := cursors[s.Name]
		switch {
		case !ok && s.Spec().Every() > 0:
			fmt.Fprintf(a.stderr, "schedule %s has not started in %s: @every runs are counted from %s; the daemon counts them from when it starts the schedule\n", s.Name, a.dbPath, counted)
		case ok:
			opts.Cursor = cur.At
			if a.o.from == "" && cur.At.After(opts.From) {
				opts.From = cur.At // the beat runs nothing at or before its cursor
			}
			if cur.Paused {
				fmt.Fprintf(a.stderr, "schedule %s is paused: these runs happen only after -resume\n", s.Name)
			}
		}
	}
	if s.Spec().Every() > 0 && opts.Cursor.IsZero() && a.o.from != "" {
		// Counted from -from itself, as the beat counts from a new cursor.
		opts.From = opts.From.Add(time.Nanosecond)
	}
	runs, err := schedule.NextRuns(a.cfg, s.Name, a.o.n, opts)
	if err != nil {
		return err
	}
	out := make([]nextView, len(runs))
	for i, r := range runs {
		out[i] = nextView{At: instant(r.At, s.Location), DST: r.DST, Note: r.Note}
	}
	if a.o.json {
		return writeJSON(a.stdout, out)
	}
	w := bufio.NewWriter(a.stdout)
	for _, r := range out {
		if r.DST != "" {
			fmt.Fprintf(w, "%s  %s: %s\n", r.At, r.DST, r.Note)
		} else {
			fmt.Fprintln(w, r.At)
		}
	}
	return w.Flush()
}

func (a *app) setPaused(ctx context.Context, name string, paused bool) error {
	if _, err := a.schedule(name); err != nil {
		return err
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	if paused {
		if err := schedule.Pause(ctx, q, a.cfg, name); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "paused %s\n", name)
		return nil
	}
	r, err := schedule.ResumeSettled(ctx, q, a.cfg, name, q.Clock().Now(), a.o.skip)
	if err != nil {
		return err
	}
	a.printResumed(name, r)
	return nil
}

func (a *app) listDead(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	dead, err := q.Dead(ctx, 1000)
	if err != nil {
		return err
	}
	if a.o.json {
		return writeJSON(a.stdout, jobViews(dead, a.cfg))
	}
	if len(dead) == 0 {
		fmt.Fprintln(a.stdout, "no dead jobs")
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "ID\tTYPE\tKEY\tATTEMPTS\tDIED\tLAST ERROR\n")
	for _, j := range dead {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Type, j.Key, j.Attempt, j.MaxAttempts, rfc3339(j.FinishedAt, time.UTC), firstLine(a.cfg.Redactor(j.Type).Attempt(j.Payload, j.LastError), 100))
	}
	return w.Flush()
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func (a *app) retryDead(ctx context.Context) error {
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	if a.o.retry == "all" {
		n, err := q.RetryAllDead(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%d dead jobs made pending\n", n)
		return nil
	}
	j, err := a.findJob(ctx, q, a.o.retry)
	if err != nil {
		return err
	}
	if err := q.Retry(ctx, j.ID); err != nil {
		if errors.Is(err, queue.ErrNotFound) {
			return fmt.Errorf("job %d (%s) is %s, not dead: only a dead job can be retried", j.ID, j.Key, j.State)
		}
		return err
	}
	fmt.Fprintf(a.stdout, "job %d (%s) made pending\n", j.ID, j.Key)
	return nil
}

func (a *app) backfillRange(ctx context.Context) error {
	s, err := a.schedule(a.o.backfill)
	if err != nil {
		return err
	}
	from, _, err := parseBound("-from", a.o.from, s.Location, false)
	if err != nil {
		return err
	}
	to, day, err := parseBound("-to", a.o.to, s.Location, true)
	if err != nil {
		return err
	}
	if to.Before(from) {
		return usagef("-to %s is before -from %s", rfc3339(to, s.Location), rfc3339(from, s.Location))
	}
	now := a.clock.Now()
	if to.After(now) {
		if !day || from.After(now) {
			return usagef("-to %s is in the future: backfill is for the past", a.o.to)
		}
		// A whole day that is today: its instants up to now.
		to = now
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	res, err := schedule.Backfill(ctx, q, a.cfg, a.o.backfill, from, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "backfill %s from %s to %s (%s)\n", s.Name, rfc3339(from, s.Location), rfc3339(to, s.Location), s.Location)
	inserted := 0
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for i := 0; i < len(res); {
		// The jobs of one instant, one per item, are adjacent.
		at := res[i].Key[strings.LastIndex(res[i].Key, "|")+1:]
		n, fresh := 0, 0
		for ; i < len(res) && strings.HasSuffix(res[i].Key, "|"+at); i++ {
			n++
			if res[i].Inserted {
				fresh++
			}
		}
		inserted += fresh
		shown := at
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			shown = rfc3339(t, s.Location)
		}
		what := "enqueued"
		switch {
		case fresh == 0:
			what = "already existed"
		case fresh < n:
			what = fmt.Sprintf("%d enqueued, %d already existed", fresh, n-fresh)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", shown, plural(n, "job"), what)
	}
	w.Flush()
	fmt.Fprintf(a.stdout, "%d runs in range: %d enqueued, %d already existed\n", len(res), inserted, len(res)-inserted)
	return nil
}

// parseBound reads -from or -to of -backfill: RFC 3339 with an offset; a
// wall time in loc, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS; or a date
// YYYY-MM-DD in loc, which means the start of that day for -from and its
// end, inclusive, for -to (end). day reports a date.
func parseBound(flag, s string, loc *time.Location, end bool) (t time.Time, day bool, err error) {
	if t, err := parseInstant(s, loc); err == nil {
		return t, false, nil
	}
	d, err := time.ParseInLocation("2006-01-02", s, loc)
	if err != nil {
		return time.Time{}, false, usagef("%s %q: want a date (2026-11-23) or a wall time (2026-11-23T03:00) in the schedule's zone (%s), or RFC 3339 (2026-11-23T03:00:00+03:00)", flag, s, loc)
	}
	if end {
		// The last instant of the day: the next day's first, less a nanosecond.
		next := time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc)
		return next.Add(-time.Nanosecond), true, nil
	}
	return d, true, nil
}

// jobView is a job as the CLI shows it.
type jobView struct {
	ID          int64           `json:"id"`
	Key         string          `json:"key"`
	Type        string          `json:"type"`
	State       string          `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Priority    int             `json:"priority"`
	Version     int             `json:"version"` // of the payload's format
	Payload     json.RawMessage `json:"payload"`
	// PayloadError says why Payload is a marker instead of the stored
	// payload (see payloadView).
	PayloadError string `json:"payload_error,omitempty"`
	Schedule     string `json:"schedule,omitempty"`
	Item         string `json:"item,omitempty"`
	ScheduledAt  string `json:"scheduled_at,omitempty"`
	// ScheduledAtZone is ScheduledAt in Zone, the zone of the job's
	// schedule in the config (-job only; absent when the config has no such
	// schedule).
	ScheduledAtZone string        `json:"scheduled_at_zone,omitempty"`
	Zone            string        `json:"zone,omitempty"`
	RunAt           string        `json:"run_at"`
	CreatedAt       string        `json:"created_at"`
	RetriedAt       string        `json:"retried_at,omitempty"` // the operator's latest -retry
	StartedAt       string        `json:"started_at,omitempty"`
	FinishedAt      string        `json:"finished_at,omitempty"`
	LeaseUntil      string        `json:"lease_until,omitempty"`
	Owner           string        `json:"owner,omitempty"`
	LastError       string        `json:"last_error,omitempty"`
	Attempts        []attemptView `json:"attempts,omitempty"`
}

type attemptView struct {
	Number     int    `json:"number"`
	Worker     string `json:"worker"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output,omitempty"`
}

func optTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return rfc3339(t, time.UTC)
}

// viewJob is j as the CLI shows it, its secrets masked by the redact and
// redact_output of its task in cfg (nil: none).
func viewJob(j *queue.Job, cfg *schedule.Config) jobView {
	r := cfg.Redactor(j.Type)
	payload, payloadErr := payloadView(r, j.Payload)
	return jobView{
		ID: j.ID, Key: j.Key, Type: j.Type, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		Priority: j.Priority, Version: j.Version, Payload: payload, PayloadError: payloadErr, Schedule: j.Schedule, Item: j.Item, ScheduledAt: optTime(j.ScheduledAt),
		RunAt: rfc3339(j.RunAt, time.UTC), CreatedAt: rfc3339(j.CreatedAt, time.UTC), StartedAt: optTime(j.StartedAt),
		FinishedAt: optTime(j.FinishedAt), LeaseUntil: optTime(j.LeaseUntil), Owner: j.Owner, LastError: r.Attempt(j.Payload, j.LastError),
		RetriedAt: optTime(j.RetriedAt),
	}
}

func jobViews(js []*queue.Job, cfg *schedule.Config) []jobView {
	out := make([]jobView, 0, len(js))
	for _, j := range js {
		out = append(out, viewJob(j, cfg))
	}
	return out
}

func (a *app) showJob(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	j, err := a.findJob(ctx, q, a.o.job)
	if _, none := errors.AsType[*noJobError](err); none {
		if s, ok, err := a.skipOfKey(ctx, q, a.o.job); ok || err != nil {
			if err != nil {
				return err
			}
			return a.printSkippedJob(a.o.job, s)
		}
	}
	if err != nil {
		return err
	}
	as, err := q.Attempts(ctx, j.ID)
	if err != nil {
		return err
	}
	v := viewJob(j, a.cfg)
	r := a.cfg.Redactor(j.Type)
	if loc := a.scheduleZone(j.Schedule); loc != nil && !j.ScheduledAt.IsZero() {
		v.ScheduledAtZone, v.Zone = rfc3339(j.ScheduledAt, loc), loc.String()
	}
	for _, at := range as {
		v.Attempts = append(v.Attempts, attemptView{Number: at.Number, Worker: at.Worker, StartedAt: rfc3339(at.StartedAt, time.UTC),
			FinishedAt: rfc3339(at.FinishedAt, time.UTC), Outcome: string(at.Outcome), Error: r.Attempt(j.Payload, at.Error), Output: r.Attempt(j.Payload, at.Output)})
	}
	if a.o.json {
		return writeJSON(a.stdout, v)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s\t%s\n", k, v)
		}
	}
	row("id", strconv.FormatInt(v.ID, 10))
	row("key", v.Key)
	row("type", v.Type)
	row("state", v.State)
	row("attempts", fmt.Sprintf("%d of %d", v.Attempt, v.MaxAttempts))
	row("version", strconv.Itoa(v.Version))
	row("payload", string(v.Payload))
	row("payload error", v.PayloadError)
	row("schedule", v.Schedule)
	row("item", v.Item)
	if v.ScheduledAtZone != "" {
		row("scheduled at", fmt.Sprintf("%s (%s %s)", v.ScheduledAt, v.ScheduledAtZone, v.Zone))
	} else {
		row("scheduled at", v.ScheduledAt)
	}
	row("run at", v.RunAt)
	row("created", v.CreatedAt)
	row("retried at", v.RetriedAt)
	row("started", v.StartedAt)
	row("finished", v.FinishedAt)
	row("lease until", v.LeaseUntil)
	row("owner", v.Owner)
	row("last error", firstLine(v.LastError, 200))
	w.Flush()
	for _, at := range v.Attempts {
		fmt.Fprintf(a.stdout, "\nattempt %d: %s, %s .. %s, worker %s\n", at.Number, at.Outcome, at.StartedAt, at.FinishedAt, at.Worker)
		if at.Error != "" {
			fmt.Fprintf(a.stdout, "  error: %s\n", strings.ReplaceAll(strings.TrimSpace(at.Error), "\n", "\n  "))
		}
		if at.Output != "" {
			fmt.Fprintf(a.stdout, "  output:\n    %s\n", strings.ReplaceAll(strings.TrimRight(at.Output, "\n"), "\n", "\n    "))
		}
	}
	return nil
}

func (a *app) backupTo(ctx context.Context) error {
	if isDSN(a.db) {
		return usagef("-backup copies a SQLite file; database %s is PostgreSQL: back it up with pg_dump (pg_dump -Fc -f scheduler.dump \"$%s\")", a.dbPath, envDB)
	}
	if _, err := os.Stat(a.o.backup); err == nil {
		return usagef("-backup %s: file exists", a.o.backup)
	}
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	if err := q.Backup(ctx, a.o.backup); err != nil {
		// The file did not exist before: what an interrupted or failed
		// VACUUM INTO left of it is no backup.
		if rerr := os.Remove(a.o.backup); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return err
	}
	fmt.Fprintf(a.stdout, "backed up %s to %s\n", a.dbPath, a.o.backup)
	return nil
}

// printBudgets lists, for -check, the tasks that have resource limits, a
// give_up_after or a rate limit, with what an attempt that exceeds a limit
// becomes; nothing when no task has any.
func printBudgets(out io.Writer, cfg *schedule.Config) {
	var rows [][4]string
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		limits := taskLimits(t)
		if limits.IsZero() && t.GiveUpAfter == 0 && t.Rate == 0 {
			continue
		}
		row := [4]string{name, "-", "-", "-"}
		if !limits.IsZero() {
			row[1] = limits.String()
			if limits.MemoryMax > 0 || limits.CPUTimeMax > 0 {
				if limits.Retryable {
					row[1] += " (retried when exceeded)"
				} else {
					row[1] += " (permanent when exceeded)"
				}
			}
		}
		if t.GiveUpAfter > 0 {
			row[2] = queue.ShortDuration(t.GiveUpAfter)
		}
		if t.Rate > 0 {
			row[3] = fmt.Sprintf("%d/%s", t.Rate, queue.ShortDuration(t.RatePer))
			if t.RateKey != "" {
				row[3] += " per " + t.RateKey
			}
			if t.RateBurst > 1 {
				row[3] += fmt.Sprintf(", burst %d", t.RateBurst)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "TASK\tLIMITS\tGIVE UP AFTER\tRATE\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3])
	}
	w.Flush()
}
