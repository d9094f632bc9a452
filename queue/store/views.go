package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The reads of JobViews, ScheduleViews and AlarmProtocol, on every engine.

// read runs query on the engine's readers, for Collect or Each.
func (e *Base) read(ctx context.Context, query string, args ...any) Reading {
	return Read(e.b.Reader().Query(ctx, query, args...))
}

// Ping reads the database, cheaply: it fails when it cannot be read.
func (e *Base) Ping(ctx context.Context) error {
	var maxID, cursors sql.NullInt64
	if err := e.b.Reader().QueryRow(ctx, e.q.Ping).Scan(&maxID, &cursors); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// job reads the one job of query, or ErrNotFound.
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

// jobs reads the jobs of query.
func (e *Base) jobs(ctx context.Context, query string, args ...any) ([]*Job, error) {
	js, err := Collect(e.read(ctx, query, args...), ScanJob)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return js, nil
}

// List returns the jobs f selects, newest (highest id) first: a list of
// one state walks that state's index, a list of all jobs the ids, a key
// prefix the key index; each stops at the limit. A filter by type or
// schedule keeps the matches among the newest ListScanBound jobs of that
// walk (below BeforeID, for a later page).
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

// ScheduleJobs returns up to limit jobs of a schedule, newest instant first.
func (e *Base) ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*Job, error) {
	return e.jobs(ctx, e.q.ScheduleJobs, schedule, limit)
}

// bySchedule reads the jobs of query by their schedules.
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

// LastRuns returns, per schedule, its newest job: the one of its latest
// instant, or its newest manual run when it has no instant's job.
func (e *Base) LastRuns(ctx context.Context) (map[string]*Job, error) {
	return e.bySchedule(ctx, "last runs", e.q.LastRuns)
}

// LastManualRuns returns, per schedule, its newest job that stands for no
// instant (a manual run).
func (e *Base) LastManualRuns(ctx context.Context) (map[string]*Job, error) {
	return e.bySchedule(ctx, "last manual runs", e.q.LastManualRuns)
}

// Attempts returns the attempts of a job by number, and those of one
// number (an attempt given back at shutdown runs again under its number)
// in the order they were recorded. A done job whose successful attempt has
// no row of its own (it printed nothing) has it from the job's row.
func (e *Base) Attempts(ctx context.Context, jobID int64) ([]Attempt, error) {
	as, err := Collect(e.read(ctx, e.q.Attempts, jobID), ScanAttempt)
	if err != nil {
		return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
	}
	return as, nil
}

// Stats counts jobs by state and type, from the counts the engine keeps,
// and measures the oldest ready job of each type, walking the ready jobs
// once.
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

// Finishes returns, per schedule of schedules that has a job kept, when
// its jobs last finished: two seeks of an index per schedule.
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

// countStates reads the (state, count) rows of query into an outcome.
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

// Instant returns how the jobs of schedule's instant at stand: one range
// of an index, as long as the schedule's fan-out.
func (e *Base) Instant(ctx context.Context, schedule string, at time.Time) (InstantOutcome, error) {
	o := InstantOutcome{Schedule: schedule, ScheduledAt: at, States: map[State]int{}}
	if err := e.countStates(ctx, &o, e.q.InstantStates, schedule, at); err != nil {
		return o, fmt.Errorf("instant of %s: %w", schedule, err)
	}
	return o, nil
}

// ManualRun returns how the jobs of one manual run stand: the newest span
// jobs of schedule that stand for no instant, have an id up to lastID and
// a key ending with keySuffix. Other jobs may have ids among the run's
// (another writer's), so the read walks the schedule's manual runs down
// from lastID, not a range of ids.
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

// skips reads the skips of query.
func (e *Base) skips(ctx context.Context, what, query string, args ...any) ([]Skip, error) {
	out, err := Collect(e.read(ctx, query, args...), ScanSkip)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// ListSkips returns up to limit (1 to MaxList) skipped instants, newest
// instant first: of schedule, or of every schedule when it is empty.
func (e *Base) ListSkips(ctx context.Context, schedule string, limit int) ([]Skip, error) {
	if err := CheckLimit("list skips", limit); err != nil {
		return nil, err
	}
	if schedule == "" {
		return e.skips(ctx, "list skips", e.q.SkipsAll, limit)
	}
	return e.skips(ctx, "list skips", e.q.SkipsOf, schedule, limit)
}

// SkipAt returns the skip of schedule's item at the instant at: one of that
// item, or one of the whole schedule (item ""). It returns ErrNotFound when
// the instant was not skipped, or its record was purged.
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

// SkipSummary counts the skips of schedule's instants after since (at most
// MaxSkipCount) and returns its newest skip: two bounded reads of one
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

// optional is the result of a read of one row that may find none: nil
// then.
func optional[T any](v T, err error) (*T, error) {
	switch {
	case errors.Is(err, ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &v, nil
}

// Alarms returns up to limit (1 to MaxList) alarms, newest first: of
// schedule, or of every schedule when it is empty.
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

// LastConfig returns the configuration stored by the last SaveConfig, or
// ErrNotFound when none was stored.
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

// Pools returns the recorded pools' rows, most recently seen first (at
// most 100). A database that records no pools (an old one, read-only) has
// none.
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

// RateTAT returns the TAT of the rate limit bucket of typ and key; zero
// when it has no row (a full bucket).
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

// CursorsByName calls yield with every schedule's cursor, in the byte
// order of the schedules' names, until yield returns false. It yields them
// as it reads them, or reads them all first (Statements.CursorsReadFirst).
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

// eachCursor calls yield with each cursor query reads, in one snapshot,
// until yield returns false.
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

// alarmRows clamps the limit of a read of the alarms' evaluation to
// MaxAlarmRows.
func alarmRows(limit int) int {
	if limit <= 0 || limit > MaxAlarmRows {
		return MaxAlarmRows
	}
	return limit
}

// InstantJobs returns up to limit jobs of schedule whose instant is in
// (after, through], oldest instant first, then by item, with the start of
// their first attempts.
func (e *Base) InstantJobs(ctx context.Context, schedule string, after, through time.Time, limit int) ([]InstantJob, error) {
	out, err := Collect(e.read(ctx, e.q.InstantJobs, schedule, after, through, alarmRows(limit)), ScanInstantJob)
	if err != nil {
		return nil, fmt.Errorf("read jobs of %s: %w", schedule, err)
	}
	return out, nil
}

// DeadJobs returns up to limit dead jobs of any schedule that finished
// after after, oldest first.
func (e *Base) DeadJobs(ctx context.Context, after time.Time, limit int) ([]*Job, error) {
	return e.jobs(ctx, e.q.DeadJobs, after, alarmRows(limit))
}

// SkipsBetween returns up to limit skips of schedule for reason whose
// instant is in (after, through], oldest first.
func (e *Base) SkipsBetween(ctx context.Context, schedule string, reason SkipReason, after, through time.Time, limit int) ([]Skip, error) {
	return e.skips(ctx, "read skips of "+schedule, e.q.SkipsBetween, schedule, after, through, string(reason), alarmRows(limit))
}

// OpenAlarms returns up to limit open alarms, oldest first, with the state
// of their jobs and whether a notification of each is under way.
func (e *Base) OpenAlarms(ctx context.Context, limit int) ([]OpenAlarm, error) {
	out, err := Collect(e.read(ctx, e.q.OpenAlarms, alarmRows(limit)), ScanOpenAlarm)
	if err != nil {
		return nil, fmt.Errorf("read open alarms: %w", err)
	}
	return out, nil
}

// LastSuccess returns when the newest instant of schedule that succeeded
// finished; zero when none is kept.
func (e *Base) LastSuccess(ctx context.Context, schedule string) (time.Time, error) {
	var at Time
	err := e.b.Reader().QueryRow(ctx, e.q.LastSuccess, schedule).Scan(&at)
	if err != nil && !errors.Is(err, ErrNoRows) {
		return time.Time{}, fmt.Errorf("last success of %s: %w", schedule, err)
	}
	return at.Time, nil
}
