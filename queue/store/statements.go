package store

// Statements are the SQL texts Base runs, in the engine's dialect, with the
// arguments and columns their comments name. An empty text is one an old
// schema opened read-only cannot answer: the read finds nothing.
type Statements struct {
	// Ping reads a little of the two tables the daemon lives on.
	Ping string

	// Jobs. Each reads JobColumns (ScanJob).
	JobByID      string // id
	JobByKey     string // key
	Dead         string // limit: dead jobs, oldest first
	ScheduleJobs string // schedule, limit: newest instant first
	// LastRuns reads each schedule's newest job, manual runs last;
	// LastManualRuns its newest manual run.
	LastRuns, LastManualRuns string
	// List builds the read of the jobs f selects, checked.
	List func(f Filter) (string, []any)

	Attempts       string // job id: ScanAttempt's columns, in order
	Counts         string // state, type, n: the job counts
	ReadySince     string // now: type, min(run_at) of the ready jobs
	Pools          string // ScanPoolRow's columns, most recently seen first
	LiveOutput     string // job id: attempt, output, updated_at of its running attempt
	RateTAT        string // type, key: tat
	CancelRequests string // owner: ScanCancelRequest's columns
	LatestLease    string // the latest end of a running job's lease

	Finishes        string // schedule names: name, newest done finish, newest dead finish
	InstantStates   string // schedule, instant: state, count
	ManualRunStates string // schedule, last id, span, key suffix: state, count

	SkipsAll, SkipsOf string // [schedule,] limit: SkipColumns
	SkipAt            string // schedule, item, instant: SkipColumns
	SkipCount         string // schedule, since, cap: count
	LastSkip          string // schedule: SkipColumns

	AlarmsAll, AlarmsOf string // [schedule,] limit: AlarmColumns
	LastConfig          string // path, data, sha256, loaded_at
	Cursors             string // ScanCursor's columns
	CursorsByName       string // the same, by the names' bytes
	// CursorsReadFirst reads every cursor before CursorsByName yields,
	// leaving connections to the caller's writes, for an engine whose
	// readers share the writers' pool.
	CursorsReadFirst bool

	AlarmMarks   string // ScanAlarmMark's columns
	InstantJobs  string // schedule, after, through, limit: ScanInstantJob's columns
	DeadJobs     string // after, limit: JobColumns
	SkipsBetween string // schedule, after, through, reason, limit: SkipColumns
	OpenAlarms   string // limit: ScanOpenAlarm's columns
	LastSuccess  string // schedule: finished_at

	// The operator's writes.
	Retry         string // now, id (0: every dead job): RETURNING type
	CancelState   string // id: state, locked for the transaction
	CancelPending string // now, by, id: RETURNING type
	CancelRunning string // now, by, id
	SaveConfig    string // path, data, sha256, loaded_at
	SetPaused     string // schedule, now, paused, paused_at

	// The beat's.
	Cursor       string // schedule: at, paused
	InsertCursor string // schedule, at, now: creates it, or nothing
	// MoveCursor is one cursor's compare-and-set: schedule, to, from,
	// paused, resume, now.
	MoveCursor string

	// The alarms'.
	InsertAlarm string // key, schedule, item, instant, kind, job, error, detail, open, now: RETURNING id
	CloseAlarms string // ids
	MoveMark    string // schedule, late, missed, misfire, dead, now

	// The pool's and maintenance's.
	Leave           string // owner
	PurgeSkips      string // before, limit
	PurgeAlarms     string // before, limit
	PurgeRateLimits string // now
	PurgeLive       string // the live output of attempts no longer running
}
