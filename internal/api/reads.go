package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Defaults and bounds of the lists' query parameters.
const (
	defaultLimit = 50
	defaultNext  = 5
	maxNext      = 1000
)

// statusView is GET /status: the counts, the daemons, the schedules.
type statusView struct {
	At            *string                   `json:"at"`
	Counts        map[string]map[string]int `json:"counts"` // state -> task -> jobs
	Totals        map[string]int            `json:"totals"`
	Dead          int                       `json:"dead"`
	OldestReadyMS *int64                    `json:"oldest_ready_ms"` // null: none waiting
	DaemonAlive   bool                      `json:"daemon_alive"`
	Daemons       int                       `json:"daemons"` // worker pools seen within store.AliveWithin
	OpenIncidents int                       `json:"open_incidents"`
	Schedules     []scheduleView            `json:"schedules"`
}

func (a *API) status(r *http.Request, _ caller) (int, any, error) {
	ctx, q := r.Context(), a.cfg.Queue
	st, err := q.Stats(ctx)
	if err != nil {
		return 0, nil, err
	}
	v := statusView{At: rfc3339(st.At, time.UTC), Counts: map[string]map[string]int{}, Totals: map[string]int{}, Dead: st.Dead}
	for s, m := range st.Counts {
		v.Counts[string(s)] = m
	}
	for s, n := range st.Total {
		v.Totals[string(s)] = n
	}
	if st.OldestReady > 0 {
		ms := st.OldestReady.Milliseconds()
		v.OldestReadyMS = &ms
	}
	pools, err := q.Pools(ctx)
	if err != nil {
		return 0, nil, err
	}
	for _, p := range pools {
		if p.Alive(st.At) {
			v.Daemons++
		}
	}
	v.DaemonAlive = v.Daemons > 0
	open, err := q.OpenIncidents(ctx, queue.MaxList)
	if err != nil {
		return 0, nil, err
	}
	v.OpenIncidents = len(open)
	if v.Schedules, err = a.scheduleViews(ctx); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// scheduleViews are the config's schedules in order, then those only the
// database's jobs name, by name: what -status lists.
func (a *API) scheduleViews(ctx context.Context) ([]scheduleView, error) {
	q, cfg := a.cfg.Queue, a.cfg.ConfigFunc()
	last, err := q.LastRuns(ctx)
	if err != nil {
		return nil, err
	}
	manual, err := q.LastManualRuns(ctx)
	if err != nil {
		return nil, err
	}
	cursors, err := q.Cursors(ctx)
	if err != nil {
		return nil, err
	}
	now := q.Clock().Now()
	out := []scheduleView{}
	for _, s := range cfg.Schedules {
		out = append(out, viewSchedule(cfg, s, s.Name, cursors, last, manual, now))
	}
	for _, s := range cfg.Followers() {
		v := viewSchedule(cfg, s, s.Name, cursors, last, manual, now)
		fs, err := q.FanInsOf(ctx, s.Name, 1)
		if err != nil {
			return nil, err
		}
		if len(fs) == 1 && fs[0].State == store.FanInWaiting {
			v.Waiting = optString(fmt.Sprintf("waiting: %d of %d ended", fs[0].Ended, fs[0].Expected))
		}
		out = append(out, v)
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
		if _, ok := scheduleOf(cfg, name); !ok {
			out = append(out, viewSchedule(cfg, nil, name, cursors, last, manual, now))
		}
	}
	return out, nil
}

// scheduleOf returns the schedule of cfg called name, with cron or after.
func scheduleOf(cfg *config.Config, name string) (*config.Schedule, bool) {
	if s, ok := cfg.Schedule(name); ok {
		return s, true
	}
	return cfg.Follower(name)
}

// viewSchedule is the schedule name (s, nil when not configured) as of now.
func viewSchedule(cfg *config.Config, s *config.Schedule, name string, cursors map[string]store.Cursor, last, manual map[string]*queue.Job, now time.Time) scheduleView {
	v := scheduleView{Name: name, Paused: cursors[name].Paused}
	loc := time.UTC
	if s != nil {
		loc = s.Location
		v.Configured, v.Cron, v.Zone, v.Task = true, &s.Cron, optString(s.Location.String()), &s.Task
		if s.After != "" {
			v.Cron, v.After = nil, &s.After
		} else if !v.Paused {
			if runs, err := schedule.NextRuns(cfg, name, 1, nextOptions(cursors, name, now)); err == nil && len(runs) > 0 {
				v.NextRun = rfc3339(runs[0].At, loc)
			}
		}
	}
	// A manual run that LastRuns falls back to is shown as manual only.
	if j := last[name]; j != nil && !j.ScheduledAt.IsZero() {
		v.LastRun = &runView{At: rfc3339(j.ScheduledAt, loc), State: string(j.State), JobID: j.ID}
	}
	if j := manual[name]; j != nil {
		v.LastManualRun = &runView{At: rfc3339(j.CreatedAt, loc), State: string(j.State), JobID: j.ID}
	}
	return v
}

// nextOptions counts from now, or from the cursor when later, with
// "@every" from the cursor: as the beat, -status and -next count.
func nextOptions(cursors map[string]store.Cursor, name string, now time.Time) schedule.NextOptions {
	opts := schedule.NextOptions{From: now}
	if cur, ok := cursors[name]; ok {
		opts.Cursor = cur.At
		if cur.At.After(opts.From) {
			opts.From = cur.At
		}
	}
	return opts
}

func (a *API) schedules(r *http.Request, _ caller) (int, any, error) {
	vs, err := a.scheduleViews(r.Context())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"schedules": vs}, nil
}

// oneSchedule is a schedule of the config, with cron or after.
func (a *API) oneSchedule(r *http.Request, _ caller) (int, any, error) {
	s, ok := scheduleOf(a.cfg.ConfigFunc(), r.PathValue("name"))
	if !ok {
		_, err := a.schedule(r) // the error that names the schedules there are
		return 0, nil, err
	}
	vs, err := a.scheduleViews(r.Context())
	if err != nil {
		return 0, nil, err
	}
	for _, v := range vs {
		if v.Name == s.Name {
			return http.StatusOK, v, nil
		}
	}
	return 0, nil, problemf(http.StatusNotFound, codeUnknownSchedule, "no schedule named %q", s.Name)
}

// schedule is the configured schedule the path names.
func (a *API) schedule(r *http.Request) (*config.Schedule, error) {
	name, cfg := r.PathValue("name"), a.cfg.ConfigFunc()
	if s, ok := cfg.Schedule(name); ok {
		return s, nil
	}
	have := make([]string, 0, len(cfg.Schedules))
	for _, s := range cfg.Schedules {
		have = append(have, s.Name)
	}
	p := problemf(http.StatusNotFound, codeUnknownSchedule, "no schedule named %q%s (have: %s)", name, cfg.ScheduleHint(name), strings.Join(have, ", "))
	p.have = have
	return nil, p
}

// nextView is a run of GET /schedules/{name}/next.
type nextView struct {
	At   *string `json:"at"`
	DST  *string `json:"dst"`  // "moved" or "folded"
	Note *string `json:"note"` // what the daylight-saving rule did
}

func (a *API) next(r *http.Request, _ caller) (int, any, error) {
	s, err := a.schedule(r)
	if err != nil {
		return 0, nil, err
	}
	n, err := intParam(r, "n", defaultNext, 1, maxNext)
	if err != nil {
		return 0, nil, err
	}
	cursors, err := a.cfg.Queue.Cursors(r.Context())
	if err != nil {
		return 0, nil, err
	}
	opts := nextOptions(cursors, s.Name, a.cfg.Queue.Clock().Now())
	if from := r.URL.Query().Get("from"); from != "" {
		t, err := time.Parse(time.RFC3339, from)
		if err != nil {
			return 0, nil, problemf(http.StatusBadRequest, codeInvalidParameter, "from %q: want RFC 3339, such as 2026-11-01T00:00:00-04:00", from)
		}
		opts.From = t.Add(-time.Nanosecond) // runs at or after from
		if s.Expr().Every() > 0 && opts.Cursor.IsZero() {
			opts.From = t // counted from from itself, as the beat counts from a new cursor
		}
	}
	runs, err := schedule.NextRuns(a.cfg.ConfigFunc(), s.Name, n, opts)
	if err != nil {
		return 0, nil, err
	}
	out := make([]nextView, len(runs))
	for i, run := range runs {
		out[i] = nextView{At: rfc3339(run.At, s.Location), DST: optString(run.DST), Note: optString(run.Note)}
	}
	return http.StatusOK, map[string]any{"schedule": s.Name, "zone": s.Location.String(), "paused": cursors[s.Name].Paused, "runs": out}, nil
}

// intParam is query parameter name, def when absent, within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, problemf(http.StatusBadRequest, codeInvalidParameter, "%s %q: want a whole number from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

// pathID is the path's {id}: a positive whole number.
func pathID(r *http.Request, what string) (int64, error) {
	s := r.PathValue("id")
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, problemf(http.StatusBadRequest, codeInvalidID, "%q is not %s id: want a positive whole number", s, what)
	}
	return id, nil
}

func (a *API) jobs(r *http.Request, _ caller) (int, any, error) {
	q := r.URL.Query()
	f := queue.Filter{State: queue.State(q.Get("state")), Type: q.Get("task"), Schedule: q.Get("schedule"), KeyPrefix: q.Get("key_prefix")}
	if f.State != "" && !f.State.Valid() {
		return 0, nil, problemf(http.StatusBadRequest, codeInvalidParameter, "state %q: want pending, running, done, dead, cancelled or discarded", f.State)
	}
	var err error
	if f.Limit, err = intParam(r, "limit", defaultLimit, 1, queue.MaxList); err != nil {
		return 0, nil, err
	}
	if s := q.Get("before_id"); s != "" {
		if f.BeforeID, err = strconv.ParseInt(s, 10, 64); err != nil || f.BeforeID <= 0 {
			return 0, nil, problemf(http.StatusBadRequest, codeInvalidParameter, "before_id %q: want a positive whole number", s)
		}
	}
	js, err := a.cfg.Queue.List(r.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	cfg := a.cfg.ConfigFunc()
	out := make([]jobView, 0, len(js))
	for _, j := range js {
		out = append(out, viewJob(j, cfg))
	}
	var next *int64
	if len(js) == f.Limit {
		next = &js[len(js)-1].ID
	}
	return http.StatusOK, map[string]any{"jobs": out, "next_before_id": next}, nil
}

func (a *API) job(r *http.Request, _ caller) (int, any, error) {
	j, err := a.findJob(r)
	if err != nil {
		return 0, nil, err
	}
	as, err := a.cfg.Queue.Attempts(r.Context(), j.ID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, viewJob(j, a.cfg.ConfigFunc()).withAttempts(j, as), nil
}

// findJob is the job the path's {id} names.
func (a *API) findJob(r *http.Request) (*queue.Job, error) {
	id, err := pathID(r, "a job")
	if err != nil {
		return nil, err
	}
	j, err := a.cfg.Queue.Job(r.Context(), id)
	if errorsIsNotFound(err) {
		return nil, problemf(http.StatusNotFound, codeJobNotFound, "no job %d", id)
	}
	return j, err
}

func (a *API) alarms(r *http.Request, _ caller) (int, any, error) {
	limit, err := intParam(r, "limit", defaultLimit, 1, queue.MaxList)
	if err != nil {
		return 0, nil, err
	}
	sched := r.URL.Query().Get("schedule")
	als, err := a.cfg.Queue.Alarms(r.Context(), sched, limit)
	if err != nil {
		return 0, nil, err
	}
	cfg := a.cfg.ConfigFunc()
	out := make([]alarmView, 0, len(als))
	for _, al := range als {
		v := alarmView{ID: al.ID, Schedule: al.Schedule, Item: optString(al.Item), Instant: rfc3339(al.ScheduledAt, zone(cfg, al.Schedule)),
			Kind: string(al.Kind), Error: optString(al.Error), Open: al.Open, RaisedAt: rfc3339(al.RaisedAt, time.UTC), Detail: al.Detail}
		if al.JobID != 0 {
			v.JobID = &al.JobID
		}
		if queue.CheckPayload(v.Detail) != nil {
			v.Detail = nil // null: no detail, or one that cannot be shown
		}
		out = append(out, v)
	}
	return http.StatusOK, map[string]any{"alarms": out}, nil
}

func (a *API) incidents(r *http.Request, _ caller) (int, any, error) {
	limit, err := intParam(r, "limit", defaultLimit, 1, queue.MaxList)
	if err != nil {
		return 0, nil, err
	}
	ctx, q := r.Context(), a.cfg.Queue
	ins, err := q.Incidents(ctx, r.URL.Query().Get("schedule"), limit)
	if err != nil {
		return 0, nil, err
	}
	silences, err := q.Silences(ctx)
	if err != nil {
		return 0, nil, err
	}
	cfg := a.cfg.ConfigFunc()
	out := make([]incidentView, 0, len(ins))
	for _, in := range ins {
		out = append(out, viewIncident(in, zone(cfg, in.Schedule), silences))
	}
	return http.StatusOK, map[string]any{"incidents": out}, nil
}
