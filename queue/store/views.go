package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The reads of JobViews, ScheduleViews and AlarmProtocol, on every engine.

func (e *Base) read(ctx context.Context, query string, args ...any) Reading {
	return Read(e.b.Reader().Query(ctx, query, args...))
}

// Ping fails when the database cannot be read. It is cheap.
func (e *Base) Ping(ctx context.Context) error {
	var maxID, cursors sql.NullInt64
	if err := e.b.Reader().QueryRow(ctx, e.q.Ping).Scan(&maxID, &cursors); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

func (e *Base) job(ctx context.Context, what, query string, arg any) (*Job, error) {
	j, err := ScanJob(e.b.Reader().QueryRow(ctx, query, arg))
	if errors.Is(err, ErrNoRows) {
		return nil, fmt.Errorf("look up job %s: %w", what, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("look up job %s: %w", what, err)
	}
	return j, nil
}

// Job returns the job with this id, or ErrNotFound.
func (e *Base) Job(ctx context.Context, id int64) (*Job, error) {
	return e.job(ctx, fmt.Sprint(id), e.q.JobByID, id)
}

// JobByKey returns the job with this dedup key, or ErrNotFound.
func (e *Base) JobByKey(ctx context.Context, key string) (*Job, error) {
	return e.job(ctx, key, e.q.JobByKey, key)
}

func (e *Base) jobs(ctx context.Context, query string, args ...any) ([]*Job, error) {
	js, err := Collect(e.read(ctx, query, args...), ScanJob)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return js, nil
}

// List returns the jobs f selects, newest first, walking one state's index,
// the ids, or the key index for a prefix. A type or schedule filter keeps
// matches among the walk's newest ListScanBound jobs.
func (e *Base) List(ctx context.Context, f Filter) ([]*Job, error) {
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 0 || f.Limit > MaxList {
		return nil, fmt.Errorf("list jobs: limit %d: want 1 to %d", f.Limit, MaxList)
	}
	if f.State != "" && !f.State.Valid() {
		return nil, fmt.Errorf("list jobs: unknown state %q", f.State)
	}
	query, args := e.q.List(f)
	return e.jobs(ctx, query, args...)
}

// Dead returns up to limit dead jobs, oldest first.
func (e *Base) Dead(ctx context.Context, limit int) ([]*Job, error) {
	return e.jobs(ctx, e.q.Dead, limit)
}

// ScheduleJobs returns up to limit jobs of schedule, newest instant first.
func (e *Base) ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*Job, error) {
	return e.jobs(ctx, e.q.ScheduleJobs, schedule, limit)
}

func (e *Base) bySchedule(ctx context.Context, what, query string) (map[string]*Job, error) {
	js, err := e.jobs(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make(map[string]*Job, len(js))
	for _, j := range js {
		out[j.Schedule] = j
	}
	return out, nil
}

// LastRuns implements ScheduleViews.LastRuns.
func (e *Base) LastRuns(ctx context.Context) (map[string]*Job, error) {
	return e.bySchedule(ctx, "last runs", e.q.LastRuns)
}

// LastManualRuns implements ScheduleViews.LastManualRuns.
func (e *Base) LastManualRuns(ctx context.Context) (map[string]*Job, error) {
	return e.bySchedule(ctx, "last manual runs", e.q.LastManualRuns)
}

// Attempts implements JobViews.Attempts. An attempt given back at shutdown
// runs again under its number.
func (e *Base) Attempts(ctx context.Context, jobID int64) ([]Attempt, error) {
	as, err := Collect(e.read(ctx, e.q.Attempts, jobID), ScanAttempt)
	if err != nil {
		return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
	}
	return as, nil
}

// Stats counts jobs from the engine's counts and ages each type's oldest
// ready job in one walk of the ready jobs.
func (e *Base) Stats(ctx context.Context) (Stats, error) {
	now := e.clock.Now()
	st := Stats{Counts: map[State]map[string]int{}, Total: map[State]int{}, ReadySince: map[string]time.Time{}, At: now}
	r := e.b.Reader()
	err := Read(r.Query(ctx, e.q.Counts)).Each(func(row Row) (bool, error) {
		var state State
		var typ string
		var n int
		if err := row.Scan(&state, &typ, &n); err != nil {
			return false, err
		}
		if st.Counts[state] == nil {
			st.Counts[state] = map[string]int{}
		}
		st.Counts[state][typ] = n
		st.Total[state] += n
		return true, nil
	})
	if err == nil {
		err = Read(r.Query(ctx, e.q.ReadySince, now)).Each(func(row Row) (bool, error) {
			var typ string
			var at Time
			err := row.Scan(&typ, &at)
			st.ReadySince[typ] = at.Time
			st.OldestReady = max(st.OldestReady, now.Sub(at.Time))
			return true, err
		})
	}
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	st.Dead = st.Total[StateDead]
	return st, nil
}

// Finishes implements ScheduleViews.Finishes: two index seeks per schedule.
func (e *Base) Finishes(ctx context.Context, schedules []string) (map[string]Finishes, error) {
	out := make(map[string]Finishes, len(schedules))
	err := e.read(ctx, e.q.Finishes, schedules).Each(func(r Row) (bool, error) {
		var name string
		var done, dead Time
		if err := r.Scan(&name, &done, &dead); err != nil {
			return false, err
		}
		if !done.IsZero() || !dead.IsZero() {
			last := done.Time
			if dead.After(last) {
				last = dead.Time
			}
			out[name] = Finishes{LastSuccess: done.Time, LastCompletion: last}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("finishes: %w", err)
	}
	return out, nil
}

func (e *Base) countStates(ctx context.Context, o *InstantOutcome, query string, args ...any) error {
	return e.read(ctx, query, args...).Each(func(r Row) (bool, error) {
		var st State
		var n int
		err := r.Scan(&st, &n)
		o.States[st] = n
		o.Jobs += n
		return true, err
	})
}

// Instant returns how schedule's jobs of instant at stand: one index range,
// as long as the fan-out.
func (e *Base) Instant(ctx context.Context, schedule string, at time.Time) (InstantOutcome, error) {
	o := InstantOutcome{Schedule: schedule, ScheduledAt: at, States: map[State]int{}}
	if err := e.countStates(ctx, &o, e.q.InstantStates, schedule, at); err != nil {
		return o, fmt.Errorf("instant of %s: %w", schedule, err)
	}
	return o, nil
}

// ManualRun implements ScheduleViews.ManualRun, walking the schedule's manual
// runs down from lastID, not an id range.
func (e *Base) ManualRun(ctx context.Context, schedule string, lastID int64, span int, keySuffix string) (InstantOutcome, error) {
	o := InstantOutcome{Schedule: schedule, States: map[State]int{}}
	if keySuffix == "" {
		return o, fmt.Errorf("run of %s: empty key suffix", schedule)
	}
	if err := e.countStates(ctx, &o, e.q.ManualRunStates, schedule, lastID, max(span, 1), keySuffix); err != nil {
		return o, fmt.Errorf("run of %s: %w", schedule, err)
	}
	return o, nil
}

func (e *Base) skips(ctx context.Context, what, query string, args ...any) ([]Skip, error) {
	out, err := Collect(e.read(ctx, query, args...), ScanSkip)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ListSkips implements ScheduleViews.ListSkips.
func (e *Base) ListSkips(ctx context.Context, schedule string, limit int) ([]Skip, error) {
	if err := CheckLimit("list skips", limit); err != nil {
		return nil, err
	}
	if schedule == "" {
		return e.skips(ctx, "list skips", e.q.SkipsAll, limit)
	}
	return e.skips(ctx, "list skips", e.q.SkipsOf, schedule, limit)
}

// SkipAt implements ScheduleViews.SkipAt.
func (e *Base) SkipAt(ctx context.Context, schedule, item string, at time.Time) (Skip, error) {
	sk, err := ScanSkip(e.b.Reader().QueryRow(ctx, e.q.SkipAt, schedule, item, at))
	if errors.Is(err, ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return sk, fmt.Errorf("skip of %s %s at %s: %w", schedule, item, at.UTC().Format(time.RFC3339), err)
	}
	return sk, nil
}

// SkipSummary implements ScheduleViews.SkipSummary: two bounded reads of one
// index.
func (e *Base) SkipSummary(ctx context.Context, schedule string, since time.Time) (SkipSummary, error) {
	var sum SkipSummary
	r := e.b.Reader()
	err := r.QueryRow(ctx, e.q.SkipCount, schedule, since, MaxSkipCount).Scan(&sum.Count)
	if err == nil {
		sum.Last, err = optional(ScanSkip(r.QueryRow(ctx, e.q.LastSkip, schedule)))
	}
	if err != nil {
		return SkipSummary{}, fmt.Errorf("skips of %s: %w", schedule, err)
	}
	return sum, nil
}

func optional[T any](v T, err error) (*T, error) {
	switch {
	case errors.Is(err, ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &v, nil
}

// Alarms implements ScheduleViews.Alarms.
func (e *Base) Alarms(ctx context.Context, schedule string, limit int) ([]Alarm, error) {
	if err := CheckLimit("list alarms", limit); err != nil {
		return nil, err
	}
	query, args := e.q.AlarmsAll, []any{limit}
	if schedule != "" {
		query, args = e.q.AlarmsOf, []any{schedule, limit}
	}
	out, err := Collect(e.read(ctx, query, args...), func(r Row) (Alarm, error) { return ScanAlarm(r) })
	if err != nil {
		return nil, fmt.Errorf("list alarms: %w", err)
	}
	return out, nil
}

// LastConfig returns the last SaveConfig's configuration, or ErrNotFound.
func (e *Base) LastConfig(ctx context.Context) (*StoredConfig, error) {
	if e.q.LastConfig == "" {
		return nil, fmt.Errorf("last config: %w", ErrNotFound)
	}
	c := &StoredConfig{}
	var at Time
	err := e.b.Reader().QueryRow(ctx, e.q.LastConfig).Scan(&c.Path, &c.Data, &c.SHA256, &at)
	if errors.Is(err, ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("last config: %w", err)
	}
	c.LoadedAt = at.Time
	return c, nil
}

// Pools implements JobViews.Pools; a database that records no pools (old,
// read-only) has none.
func (e *Base) Pools(ctx context.Context) ([]PoolRow, error) {
	if e.q.Pools == "" {
		return nil, nil
	}
	out, err := Collect(e.read(ctx, e.q.Pools), ScanPoolRow)
	if err != nil {
		return nil, fmt.Errorf("read pools: %w", err)
	}
	return out, nil
}

// RateTAT implements JobViews.RateTAT.
func (e *Base) RateTAT(ctx context.Context, typ, key string) (time.Time, error) {
	var tat Time
	err := e.b.Reader().QueryRow(ctx, e.q.RateTAT, typ, key).Scan(&tat)
	if err != nil && !errors.Is(err, ErrNoRows) {
		return time.Time{}, fmt.Errorf("rate limit of %s: %w", typ, err)
	}
	return tat.Time, nil
}

// CancelRequests returns the cancel requests on the jobs owner runs.
func (e *Base) CancelRequests(ctx context.Context, owner string) ([]CancelRequest, error) {
	out, err := Collect(e.read(ctx, e.q.CancelRequests, owner), ScanCancelRequest)
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", err)
	}
	return out, nil
}

// Cursors returns every schedule's cursor, by schedule name.
func (e *Base) Cursors(ctx context.Context) (map[string]Cursor, error) {
	out := map[string]Cursor{}
	err := e.eachCursor(ctx, e.q.Cursors, func(c Cursor) bool {
		out[c.Schedule] = c
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CursorsByName implements BeatProtocol.CursorsByName, yielding as it reads,
// or after reading all (Statements.CursorsReadFirst).
func (e *Base) CursorsByName(ctx context.Context, yield func(Cursor) bool) error {
	if !e.q.CursorsReadFirst {
		return e.eachCursor(ctx, e.q.CursorsByName, yield)
	}
	var cs []Cursor
	if err := e.eachCursor(ctx, e.q.CursorsByName, func(c Cursor) bool { cs = append(cs, c); return true }); err != nil {
		return err
	}
	for _, c := range cs {
		if !yield(c) {
			break
		}
	}
	return nil
}

func (e *Base) eachCursor(ctx context.Context, query string, yield func(Cursor) bool) error {
	err := e.read(ctx, query).Each(func(r Row) (bool, error) {
		c, err := ScanCursor(r)
		return err == nil && yield(c), err
	})
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	return nil
}

// AlarmMarks returns every schedule's alarm marks, by schedule name.
func (e *Base) AlarmMarks(ctx context.Context) (map[string]AlarmMark, error) {
	ms, err := Collect(e.read(ctx, e.q.AlarmMarks), ScanAlarmMark)
	if err != nil {
		return nil, fmt.Errorf("read alarm marks: %w", err)
	}
	out := make(map[string]AlarmMark, len(ms))
	for _, m := range ms {
		out[m.Schedule] = m
	}
	return out, nil
}

func alarmRows(limit int) int {
	if limit <= 0 || limit > MaxAlarmRows {
		return MaxAlarmRows
	}
	return limit
}

// InstantJobs implements AlarmProtocol.InstantJobs.
func (e *Base) InstantJobs(ctx context.Context, schedule string, after, through time.Time, limit int) ([]InstantJob, error) {
	out, err := Collect(e.read(ctx, e.q.InstantJobs, schedule, after, through, alarmRows(limit)), ScanInstantJob)
	if err != nil {
		return nil, fmt.Errorf("read jobs of %s: %w", schedule, err)
	}
	return out, nil
}

// DeadJobs implements AlarmProtocol.DeadJobs.
func (e *Base) DeadJobs(ctx context.Context, after time.Time, limit int) ([]*Job, error) {
	return e.jobs(ctx, e.q.DeadJobs, after, alarmRows(limit))
}

// SkipsBetween implements AlarmProtocol.SkipsBetween.
func (e *Base) SkipsBetween(ctx context.Context, schedule string, reason SkipReason, after, through time.Time, limit int) ([]Skip, error) {
	return e.skips(ctx, "read skips of "+schedule, e.q.SkipsBetween, schedule, after, through, string(reason), alarmRows(limit))
}

// UpstreamFailedSkips implements AlarmProtocol.UpstreamFailedSkips.
func (e *Base) UpstreamFailedSkips(ctx context.Context, schedule string, after time.Time, limit int) ([]Skip, error) {
	return e.skips(ctx, "read upstream failures of "+schedule, e.q.UpstreamFailedSkips, schedule, after, alarmRows(limit))
}

// OpenAlarms implements AlarmProtocol.OpenAlarms.
func (e *Base) OpenAlarms(ctx context.Context, limit int) ([]OpenAlarm, error) {
	out, err := Collect(e.read(ctx, e.q.OpenAlarms, alarmRows(limit)), ScanOpenAlarm)
	if err != nil {
		return nil, fmt.Errorf("read open alarms: %w", err)
	}
	return out, nil
}

// LastSuccess implements AlarmProtocol.LastSuccess.
func (e *Base) LastSuccess(ctx context.Context, schedule string) (time.Time, error) {
	var at Time
	err := e.b.Reader().QueryRow(ctx, e.q.LastSuccess, schedule).Scan(&at)
	if err != nil && !errors.Is(err, ErrNoRows) {
		return time.Time{}, fmt.Errorf("last success of %s: %w", schedule, err)
	}
	return at.Time, nil
}
