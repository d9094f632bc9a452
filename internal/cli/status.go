package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// statusReport is what -status prints. A value that does not exist (no
// job waiting, a schedule never run) is null in JSON, never 0 or "".
type statusReport struct {
	Database      string                    `json:"database"`
	At            string                    `json:"at"`
	Counts        map[string]map[string]int `json:"counts"` // state -> type -> jobs
	Totals        map[string]int            `json:"totals"`
	OldestReadyMS *int64                    `json:"oldest_ready_ms"` // null: none waiting
	Dead          int                       `json:"dead"`
	// RunningPools counts the daemons' worker pools; nil when unknown.
	RunningPools *int `json:"running_pools"`
	// WaitingForHandler lists types with ready jobs no running pool handles.
	WaitingForHandler []waitingStatus `json:"waiting_for_handler"`
	// WaitingForVersion lists ready jobs of a handled type whose payload
	// version no running pool accepts.
	WaitingForVersion []versionWaitStatus `json:"waiting_for_version"`
	RateLimited       []rateStatus        `json:"rate_limited"`
	Schedules         []scheduleStatus    `json:"schedules"`
	Config            *configReport       `json:"config,omitempty"` // the config the daemon runs
	Daemons           []daemonView        `json:"daemons"`          // pool rows, most recently seen first
	DaemonAlive       bool                `json:"daemon_alive"`     // a daemon was seen within store.AliveWithin
	Configs           *configsView        `json:"configs"`          // the configs of the live daemons
	// Incidents are the newest incidents, open first; Silences the
	// schedules whose notifications are silenced.
	Incidents []incidentView `json:"incidents"`
	Silences  []silenceView  `json:"silences"`
	stats     queue.Stats
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
	// NextStart is when a keyless limit next allows a start; null when it
	// allows one now, or the limit is per key.
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

	// The newest -trigger run, at its enqueue; null when never triggered.
	LastManualRun   *string `json:"last_manual_run"`
	LastManualState *string `json:"last_manual_state"`
	LastManualJobID *int64  `json:"last_manual_job_id"`

	// The last instant's jobs by state; LastState is then the most severe.
	LastItems  int            `json:"last_items,omitempty"`
	LastStates map[string]int `json:"last_states,omitempty"`
	// The same for the last manual run.
	LastManualItems  int            `json:"last_manual_items,omitempty"`
	LastManualStates map[string]int `json:"last_manual_states,omitempty"`
	// last and lastManual are the jobs behind LastJobID and
	// LastManualJobID, kept for observeStatus.
	last, lastManual *queue.Job
	// Skips in the last day (at most store.MaxSkipCount), and the newest.
	SkipsLastDay int           `json:"skips_last_day"`
	LastSkip     *lastSkipView `json:"last_skip,omitempty"`
	// DeadlineState is "on time", "late", "missed" or "recovered" for a
	// schedule with a start_within or deadline. LastAlarm is its newest.
	DeadlineState string         `json:"deadline_state,omitempty"`
	LastAlarm     *lastAlarmView `json:"last_alarm,omitempty"`
	// After is the schedule this one follows; Waiting, its newest upstream
	// instant whose jobs have not all ended.
	After   *string       `json:"after,omitempty"`
	Waiting *fanInWaiting `json:"waiting,omitempty"`
}

// fanInWaiting is an upstream instant a schedule with after waits on.
type fanInWaiting struct {
	Instant  string `json:"instant"` // "-" for a manual run
	Ended    int    `json:"ended"`
	Expected int    `json:"expected"`
}

func (w *fanInWaiting) String() string {
	return fmt.Sprintf("waiting: %d of %d ended", w.Ended, w.Expected)
}

// fanInWait returns the newest of schedule's fan-ins still waiting, or nil.
func fanInWait(ctx context.Context, q *queue.Client, schedule string, loc *time.Location) (*fanInWaiting, error) {
	fs, err := q.FanInsOf(ctx, schedule, 1)
	if err != nil || len(fs) == 0 || fs[0].State != store.FanInWaiting {
		return nil, err
	}
	return &fanInWaiting{Instant: rfc3339(fs[0].ScheduledAt, loc), Ended: fs[0].Ended, Expected: fs[0].Expected}, nil
}

// setWaits fills the schedules with after with the upstream instant each
// waits on.
func (a *app) setWaits(ctx context.Context, q *queue.Client, rep *statusReport) error {
	for i := range rep.Schedules {
		s := &rep.Schedules[i]
		if s.After == nil {
			continue
		}
		var err error
		if s.Waiting, err = fanInWait(ctx, q, s.Name, a.zone(s.Name)); err != nil {
			return err
		}
	}
	return nil
}

// showStatus is -status: what the database holds and the daemons do.
func (a *app) showStatus(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	rep, err := a.gatherStatus(ctx, q)
	if err != nil {
		return err
	}
	if a.o.json {
		return writeJSON(a.stdout, rep)
	}
	return printStatus(a.stdout, rep)
}

// gatherStatus reads what -status shows.
func (a *app) gatherStatus(ctx context.Context, q *queue.Client) (*statusReport, error) {
	st, err := q.Stats(ctx)
	if err != nil {
		return nil, err
	}
	last, manual, err := lastRuns(ctx, q)
	if err != nil {
		return nil, err
	}
	cursors, err := q.Cursors(ctx)
	if err != nil {
		return nil, err
	}
	rep := newStatusReport(a.dbPath, st)
	if rep.Config, err = a.configStatus(ctx, q); err != nil {
		return nil, err
	}
	if err := rep.setWaiting(ctx, q); err != nil {
		return nil, err
	}
	if rep.RateLimited, err = a.rateStatus(ctx, q, st); err != nil {
		return nil, err
	}
	rep.Schedules = a.scheduleStatuses(last, manual, cursors)
	if err := a.setWaits(ctx, q, rep); err != nil {
		return nil, err
	}
	if err := a.observeStatus(ctx, q, rep); err != nil {
		return nil, err
	}
	if err := a.observeIncidents(ctx, q, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

func newStatusReport(db string, st queue.Stats) *statusReport {
	rep := &statusReport{Database: db, At: rfc3339(st.At, time.UTC), Counts: map[string]map[string]int{},
		Totals: map[string]int{}, Dead: st.Dead, stats: st}
	if st.OldestReady > 0 {
		rep.OldestReadyMS = ptr(st.OldestReady.Milliseconds())
	}
	for s, m := range st.Counts {
		rep.Counts[string(s)] = m
	}
	for s, n := range st.Total {
		rep.Totals[string(s)] = n
	}
	return rep
}

// lastRuns reads each schedule's newest instant's job and newest manual
// run. A manual run LastRuns falls back to shows as manual only.
func lastRuns(ctx context.Context, q *queue.Client) (last, manual map[string]*queue.Job, err error) {
	if last, err = q.LastRuns(ctx); err != nil {
		return nil, nil, err
	}
	if manual, err = q.LastManualRuns(ctx); err != nil {
		return nil, nil, err
	}
	for name, j := range last {
		if j.ScheduledAt.IsZero() {
			delete(last, name)
		}
	}
	return last, manual, nil
}

// setWaiting lists the ready jobs that no running pool takes.
func (rep *statusReport) setWaiting(ctx context.Context, q *queue.Client) error {
	hs, err := q.Unhandled(ctx)
	if err != nil {
		return err
	}
	rep.WaitingForHandler = []waitingStatus{}
	rep.WaitingForVersion = []versionWaitStatus{}
	if !hs.Known {
		return nil
	}
	rep.RunningPools = &hs.Pools
	for _, w := range hs.Waiting {
		if w.Version != 0 {
			rep.WaitingForVersion = append(rep.WaitingForVersion, versionWaitStatus{Type: w.Type, Version: w.Version,
				Accepted: w.Accepted, Ready: w.Ready, OldestReadyMS: w.Oldest.Milliseconds()})
			continue
		}
		rep.WaitingForHandler = append(rep.WaitingForHandler, waitingStatus{Type: w.Type, Ready: w.Ready, OldestReadyMS: w.Oldest.Milliseconds()})
	}
	return nil
}

// rateStatus lists the rate-limited tasks with ready jobs, and when a
// keyless limit next allows a start.
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

// scheduleStatuses are the config's schedules in order, then those only
// the database's jobs name, by name.
func (a *app) scheduleStatuses(last, manual map[string]*queue.Job, cursors map[string]store.Cursor) []scheduleStatus {
	var out []scheduleStatus
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
			out = append(out, ss)
		}
		for _, s := range a.cfg.Followers() {
			seen[s.Name] = true
			ss := scheduleStatus{Name: s.Name, After: ptr(s.After), Zone: ptr(s.Location.String()), Configured: true}
			ss.setLast(last[s.Name], manual[s.Name], s.Location)
			out = append(out, ss)
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
			out = append(out, ss)
		}
	}
	return out
}

// setLast fills the last scheduled and manual runs; either may be nil.
func (ss *scheduleStatus) setLast(last, manual *queue.Job, loc *time.Location) {
	ss.last, ss.lastManual = last, manual
	if last != nil {
		ss.LastRun, ss.LastState, ss.LastJobID = ptr(rfc3339(last.ScheduledAt, loc)), ptr(string(last.State)), ptr(last.ID)
	}
	if manual != nil {
		ss.LastManualRun, ss.LastManualState, ss.LastManualJobID = ptr(rfc3339(manual.CreatedAt, loc)), ptr(string(manual.State)), ptr(manual.ID)
	}
}

// nextRun is s's next run as the beat sees it, "@every" from the cursor.
func (a *app) nextRun(s *config.Schedule, cursors map[string]store.Cursor) string {
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
