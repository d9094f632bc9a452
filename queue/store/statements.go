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
	// UpstreamFailedSkips: schedule, after (recorded_at), limit: SkipColumns.
	UpstreamFailedSkips string

	// The charts'. A bucket is (instant - from) / size in whole
	// milliseconds, -1 before from.
	// ActivityAll reads the jobs ended in [lo, hi), in buckets from
	// origin: origin, size, lo, hi: bucket ended, state, bucket started
	// (else ended), bucket due (run_at), LatencyClass of started_at -
	// run_at (-1 when never started), count, greatest latency in ms, and
	// the sum of the rows' terms of ChartMarks' fingerprint.
	ActivityAll string
	ActivityOf  string // schedule, from, size: bucket ended, state, count
	// The charts' hours (store.Base's cache of ActivityAll by the hour
	// ended; empty where the store cannot keep it). ChartMarks reads each
	// hour of [lo, hi), size long: lo, size, hi: hour start, fingerprint
	// of the jobs ended in it (0 for none): the sum over them of 1 and
	// their offset in the hour. ChartHours reads the kept hours in [lo,
	// hi): hour, fingerprint, groups; PutChartHour keeps one: hour,
	// fingerprint, groups; PurgeChartHours deletes those before an
	// instant.
	ChartMarks, ChartHours, PutChartHour, PurgeChartHours string
	// Waiting reads the pending and running jobs due before through:
	// from, size, through: bucket due, bucket started (StillWaiting when
	// pending), count.
	Waiting string
	// RunTimings reads schedule's newest limit instants: schedule, limit:
	// instant, first started_at, last finished_at, jobs, dead, ended.
	RunTimings string

	// The operator's writes.
	Retry string // now, id (0: every dead job): RETURNING type
	// RetryDiscarded revives the discarded job id: now, id: RETURNING type.
	RetryDiscarded string
	// DiscardIDs ends the dead jobs of ids discarded: now, by, ids:
	// RETURNING id, type. DiscardAll ends every dead job, or those of a
	// schedule: now, by, schedule ("" for all): RETURNING id, type.
	DiscardIDs, DiscardAll string
	JobStates              string // ids: id, state
	CancelState            string // id: state, locked for the transaction
	CancelPending          string // now, by, id: RETURNING type
	CancelRunning          string // now, by, id
	SaveConfig             string // path, data, sha256, loaded_at
	SetPaused              string // schedule, now, paused, paused_at

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
	// Incidents are the incidents' and silences'; empty texts on a schema
	// without them (reads find nothing).
	Incidents IncidentStatements

	// The pool's and maintenance's.
	Leave           string // owner
	PurgeSkips      string // before, limit
	PurgeAlarms     string // before, limit
	PurgeRateLimits string // now

	// The fan-ins' (see NewFanIn).
	// InsertFanIn: key, require, then, type, schedule, item, instant, now,
	// the id of the fan-in whose members it shares or NULL; RETURNING id,
	// or no row.
	InsertFanIn      string
	FanInIDByKey     string // key: id
	AdoptMembers     string // fan-in id, job ids
	SetFanInExpected string // n, id: of the fan-in and those sharing its members
	// MoveFanIn adds to a fan-in's counts: ended, done, now, id; RETURNING
	// expected, ended, done, require, state. MoveSharers does the same to
	// the fan-ins sharing id's members, RETURNING id first.
	MoveFanIn    string
	MoveSharers  string
	FanInThen    string // id: then
	FanInMembers string // id: key, item, state of its (or the one it shares) members
	FanInInstant string // id: schedule, item, instant, created
	// FanInJobs: key, limit: JobColumns of the members of the fan-in (or
	// of the one it shares), by id.
	FanInJobs     string
	SetFanInState string // state, job id, now, id
	FanInByKey    string // key: FanInColumns
	FanInsOf      string // schedule, limit: FanInColumns, newest first
	PurgeLive     string // the live output of attempts no longer running
}
