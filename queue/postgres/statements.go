package postgres

import (
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The shared flow's statements (store.Statements) in PostgreSQL's dialect:
// instants are timestamptz, lists arrays; keys and schedule names collate as
// "C", by bytes.

const jobColumns = store.JobColumns

var jobColumnsOf = store.Qualified("jobs", jobColumns)

var queries = store.Statements{
	Ping: `SELECT (SELECT max(id) FROM jobs), (SELECT count(*) FROM cursors)`,

	JobByID:      `SELECT ` + jobColumns + ` FROM jobs WHERE id = $1`,
	JobByKey:     `SELECT ` + jobColumns + ` FROM jobs WHERE key = $1`,
	Dead:         `SELECT ` + jobColumns + ` FROM jobs WHERE state = 'dead' ORDER BY id LIMIT $1`,
	ScheduleJobs: `SELECT ` + jobColumns + ` FROM jobs WHERE schedule = $1 ORDER BY scheduled_at DESC NULLS LAST, id DESC LIMIT $2`,
	// Each schedule's newest job, manual runs last.
	LastRuns: schedulesSQL + `
SELECT ` + jobColumnsOf + ` FROM s CROSS JOIN LATERAL (
SELECT * FROM jobs j WHERE j.schedule = s.name
ORDER BY j.scheduled_at DESC NULLS LAST, j.id DESC LIMIT 1) jobs
WHERE s.name IS NOT NULL`,
	LastManualRuns: schedulesSQL + `
SELECT ` + jobColumnsOf + ` FROM s CROSS JOIN LATERAL (
SELECT * FROM jobs j WHERE j.schedule = s.name AND j.scheduled_at IS NULL
ORDER BY j.scheduled_at DESC NULLS LAST, j.id DESC LIMIT 1) jobs
WHERE s.name IS NOT NULL`,
	List: listQuery,

	Attempts:       attemptsSQL,
	Counts:         countsSQL,
	ReadySince:     `SELECT type, min(run_at) FROM jobs WHERE state = 'pending' AND run_at <= $1 GROUP BY type`,
	Pools:          `SELECT owner, pid, host, version, started_at, seen_at, config_sha256, config_at, workers FROM pools ORDER BY seen_at DESC LIMIT 100`,
	LiveOutput:     liveOutputSQL,
	RateTAT:        `SELECT tat FROM rate_limits WHERE type = $1 AND key = $2`,
	CancelRequests: `SELECT id, attempt, cancelled_by FROM jobs WHERE owner = $1 AND state = 'running' AND cancel_requested_at IS NOT NULL`,
	LatestLease:    latestLeaseSQL,

	// Three seeks of jobs_schedule_finished per schedule: a discarded job
	// ended when it went dead.
	Finishes: `SELECT n.name,
(SELECT max(finished_at) FROM jobs WHERE schedule = n.name AND state = 'done' AND finished_at IS NOT NULL),
greatest((SELECT max(finished_at) FROM jobs WHERE schedule = n.name AND state = 'dead' AND finished_at IS NOT NULL),
	(SELECT max(finished_at) FROM jobs WHERE schedule = n.name AND state = 'discarded' AND finished_at IS NOT NULL))
FROM unnest($1::text[]) AS n(name)`,
	InstantStates: `SELECT state, count(*) FROM jobs WHERE schedule = $1 AND scheduled_at = $2 GROUP BY state`,
	// Walks jobs_schedule_at's manual runs down from the run's last id.
	ManualRunStates: `SELECT state, count(*) FROM (
SELECT state FROM jobs
WHERE schedule = $1 AND scheduled_at IS NULL AND id <= $2 AND right(key, length($4)) = $4
ORDER BY scheduled_at DESC NULLS LAST, id DESC LIMIT $3) r
GROUP BY state`,

	SkipsAll:  `SELECT ` + store.SkipColumns + ` FROM skips ORDER BY scheduled_at DESC, schedule DESC, item DESC LIMIT $1`,
	SkipsOf:   `SELECT ` + store.SkipColumns + ` FROM skips WHERE schedule = $1 ORDER BY scheduled_at DESC, item DESC LIMIT $2`,
	SkipAt:    `SELECT ` + store.SkipColumns + ` FROM skips WHERE schedule = $1 AND item IN ($2, '') AND scheduled_at = $3 ORDER BY item DESC LIMIT 1`,
	SkipCount: skipCountSQL,
	LastSkip:  lastSkipSQL,

	AlarmsAll:     `SELECT ` + store.AlarmColumns + ` FROM alarms ORDER BY id DESC LIMIT $1`,
	AlarmsOf:      alarmsOfSQL,
	LastConfig:    `SELECT path, data, sha256, loaded_at FROM running_config WHERE id = 1`,
	Cursors:       `SELECT schedule, at, paused, paused_at FROM cursors`,
	CursorsByName: `SELECT schedule, at, paused, paused_at FROM cursors ORDER BY schedule COLLATE "C"`,
	// Read first: a beat's commits need the pool's connections.
	CursorsReadFirst: true,

	AlarmMarks:   `SELECT schedule, late_at, missed_at, misfire_at, dead_at FROM alarm_marks`,
	InstantJobs:  instantJobsSQL,
	DeadJobs:     deadJobsSQL,
	SkipsBetween: skipsBetweenSQL,
	OpenAlarms:   openAlarmsSQL,
	LastSuccess:  lastSuccessSQL,
	// UpstreamFailedSkips reads the index of those skips alone.
	UpstreamFailedSkips: upstreamFailedSkipsSQL,

	ActivityAll:     activityAllSQL,
	ActivityOf:      activityOfSQL,
	Waiting:         queuedSQL,
	ChartMarks:      chartMarksSQL,
	ChartHours:      chartHoursSQL,
	PutChartHour:    putChartHourSQL,
	PurgeChartHours: purgeChartHoursSQL,
	RunTimings:      runTimingsSQL,

	Retry:          retrySQL,
	RetryDiscarded: retryDiscardedSQL,
	DiscardIDs: `UPDATE jobs SET state = 'discarded', discarded_at = $1, discarded_by = $2
WHERE id = ANY($3::bigint[]) AND state = 'dead' RETURNING id, type`,
	DiscardAll: `UPDATE jobs SET state = 'discarded', discarded_at = $1, discarded_by = $2
WHERE state = 'dead' AND ($3::text = '' OR schedule = $3::text) RETURNING id, type`,
	JobStates:     `SELECT id, state FROM jobs WHERE id = ANY($1::bigint[])`,
	CancelState:   `SELECT state FROM jobs WHERE id = $1 FOR UPDATE`,
	CancelPending: cancelPendingSQL,
	CancelRunning: cancelRunningSQL,
	SaveConfig: `INSERT INTO running_config (id, path, data, sha256, loaded_at) VALUES (1, $1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET path = excluded.path, data = excluded.data, sha256 = excluded.sha256, loaded_at = excluded.loaded_at`,
	SetPaused: `INSERT INTO cursors (schedule, at, paused, paused_at, updated_at) VALUES ($1, $2, $3, $4, $2)
ON CONFLICT (schedule) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at, updated_at = excluded.updated_at`,

	Cursor:       `SELECT at, paused FROM cursors WHERE schedule = $1`,
	InsertCursor: `INSERT INTO cursors (schedule, at, updated_at) VALUES ($1, $2, $3) ON CONFLICT (schedule) DO NOTHING`,
	// Under concurrent moves PostgreSQL rechecks the condition on the
	// first mover's row, so exactly one wins.
	MoveCursor: `UPDATE cursors SET at = $2, updated_at = $6,
paused = CASE WHEN $5 THEN false ELSE paused END,
paused_at = CASE WHEN $5 THEN NULL ELSE paused_at END
WHERE schedule = $1 AND at = $3 AND paused = $4`,

	InsertAlarm: `INSERT INTO alarms (key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (key) DO NOTHING RETURNING id`,
	Incidents:   incidentStatements,
	CloseAlarms: `UPDATE alarms SET open = false WHERE open AND id = ANY($1)`,
	MoveMark: `INSERT INTO alarm_marks (schedule, late_at, missed_at, misfire_at, dead_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (schedule) DO UPDATE SET late_at = greatest(alarm_marks.late_at, excluded.late_at),
missed_at = greatest(alarm_marks.missed_at, excluded.missed_at),
misfire_at = greatest(alarm_marks.misfire_at, excluded.misfire_at),
dead_at = greatest(alarm_marks.dead_at, excluded.dead_at), updated_at = excluded.updated_at`,

	Leave: `DELETE FROM pools WHERE owner = $1`,
	PurgeSkips: `DELETE FROM skips WHERE (schedule, item, scheduled_at) IN (
SELECT schedule, item, scheduled_at FROM skips WHERE recorded_at < $1 LIMIT $2)`,
	// The marks keep a purged alarm from being raised again.
	PurgeAlarms:     `DELETE FROM alarms WHERE id IN (SELECT id FROM alarms WHERE NOT open AND raised_at < $1 LIMIT $2)`,
	PurgeRateLimits: `DELETE FROM rate_limits WHERE tat < $1`,

	InsertFanIn: `INSERT INTO fanins (key, require, then_job, type, schedule, item, scheduled_at, created_at, updated_at, share_of)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9::bigint) ON CONFLICT (key) DO NOTHING RETURNING id`,
	FanInIDByKey:     `SELECT id FROM fanins WHERE key = $1`,
	AdoptMembers:     `UPDATE jobs SET fanin_id = $1 WHERE id = ANY($2)`,
	SetFanInExpected: `UPDATE fanins SET expected = $1 WHERE id = $2 OR share_of = $2`,
	// The row's lock orders the transactions that end a fan-in's members;
	// each adds to the counts the one before it committed.
	MoveFanIn: `UPDATE fanins SET ended = ended + $1, done = done + $2, updated_at = $3 WHERE id = $4
RETURNING expected, ended, done, require, state`,
	// Sharers move under the lock MoveFanIn took on the fan-in they share.
	MoveSharers: `UPDATE fanins SET ended = ended + $1, done = done + $2, updated_at = $3 WHERE share_of = $4
RETURNING id, expected, ended, done, require, state`,
	FanInThen: `SELECT then_job FROM fanins WHERE id = $1`,
	FanInMembers: `SELECT key, item, state FROM jobs
WHERE fanin_id = (SELECT coalesce(share_of, id) FROM fanins WHERE id = $1) ORDER BY id`,
	FanInInstant: `SELECT schedule, item, scheduled_at, created_at FROM fanins WHERE id = $1`,
	FanInJobs: `SELECT ` + jobColumns + ` FROM jobs
WHERE fanin_id = (SELECT coalesce(share_of, id) FROM fanins WHERE key = $1) ORDER BY id LIMIT $2`,
	SetFanInState: `UPDATE fanins SET state = $1, job_id = coalesce($2::bigint, job_id), updated_at = $3 WHERE id = $4`,
	FanInByKey:    `SELECT ` + store.FanInColumns + ` FROM fanins WHERE key = $1`,
	FanInsOf:      `SELECT ` + store.FanInColumns + ` FROM fanins WHERE schedule = $1 ORDER BY id DESC LIMIT $2`,
	PurgeLive:     purgeLiveSQL,
}

// statements returns the flow's statements as the schema can answer them.
func (s *Store) statements() *store.Statements {
	q := queries
	sc := s.schema
	if sc.noCounts {
		q.Counts = countEveryJobSQL
	}
	if sc.noPoolConfig {
		q.Pools = strings.Replace(q.Pools, "config_sha256, config_at", "'', NULL::timestamptz", 1)
	}
	if sc.noLive {
		q.LiveOutput, q.PurgeLive = "", ""
		q.Pools = strings.Replace(q.Pools, ", workers", ", 0", 1)
	}
	if sc.noAlarmKey {
		q.OpenAlarms = strings.Replace(q.OpenAlarms, "n.alarm_key = alarms.key", "false", 1)
	}
	if sc.noFanIns {
		q.FanInByKey, q.FanInsOf, q.FanInJobs = "", "", ""
	}
	if sc.noIncidents {
		q.Incidents = store.IncidentStatements{}
	}
	if sc.noVersions || sc.noRetriedAt || sc.noAlarmKey || sc.noDiscarded {
		for _, p := range []*string{&q.JobByID, &q.JobByKey, &q.Dead, &q.ScheduleJobs, &q.LastRuns, &q.LastManualRuns, &q.InstantJobs, &q.DeadJobs, &q.FanInJobs} {
			*p = sc.jobs(*p)
		}
		q.List = func(f store.Filter) (string, []any) {
			query, args := listQuery(f)
			return sc.jobs(query), args
		}
	}
	return &q
}

// jobs returns q, reading jobColumns or jobColumnsOf, as the schema can.
func (sc schema) jobs(q string) string {
	for _, c := range []struct {
		missing     bool
		column, now string
	}{{sc.noVersions, "version", "1"}, {sc.noRetriedAt, "retried_at", "NULL::timestamptz"}, {sc.noAlarmKey, "alarm_key", "NULL::text"},
		{sc.noDiscarded, "discarded_at", "NULL::timestamptz"}, {sc.noDiscarded, "discarded_by", "NULL::text"}} {
		if c.missing {
			q = strings.ReplaceAll(q, "jobs."+c.column+",", c.now+",")
			q = strings.ReplaceAll(q, ", jobs."+c.column, ", "+c.now)
			q = strings.ReplaceAll(q, " "+c.column+",", " "+c.now+",")
			q = strings.ReplaceAll(q, ", "+c.column, ", "+c.now)
		}
	}
	return q
}

// schedulesSQL lists the distinct schedules by a skip-scan of
// jobs_schedule_at.
const schedulesSQL = `WITH RECURSIVE s(name) AS (
	(SELECT schedule FROM jobs WHERE schedule IS NOT NULL ORDER BY schedule LIMIT 1)
	UNION ALL
	SELECT (SELECT schedule FROM jobs WHERE schedule IS NOT NULL AND schedule > s.name ORDER BY schedule LIMIT 1)
	FROM s WHERE s.name IS NOT NULL
)`

// attemptsSQL lists a job's attempt rows, and a done job's silent success
// from its row.
const attemptsSQL = `SELECT job_id, attempt, worker, started_at, finished_at, outcome, error, output, 0 AS synthetic, id
FROM attempts WHERE job_id = $1
UNION ALL
SELECT id, attempt, coalesce(owner, ''), coalesce(started_at, finished_at), finished_at, 'done', '', '', 1, 0
FROM jobs WHERE id = $1 AND state = 'done' AND NOT EXISTS (
	SELECT 1 FROM attempts a WHERE a.job_id = jobs.id AND a.attempt = jobs.attempt AND a.outcome = 'done')
ORDER BY attempt, synthetic, id`

// countEveryJobSQL counts every job, for a read-only schema without
// job_counts.
const countEveryJobSQL = `SELECT state, type, count(*) FROM jobs GROUP BY state, type`

const (
	skipCountSQL = `SELECT count(*) FROM (SELECT 1 FROM skips WHERE schedule = $1 AND scheduled_at > $2 LIMIT $3) s`
	lastSkipSQL  = `SELECT ` + store.SkipColumns + ` FROM skips WHERE schedule = $1 ORDER BY scheduled_at DESC LIMIT 1`
)

// The alarms' and operators' reads, each a bounded index range (see
// TestAlarmQueryPlans).
var (
	instantJobsSQL = `SELECT ` + jobColumnsOf + `, (SELECT min(a.started_at) FROM attempts a WHERE a.job_id = jobs.id)
FROM jobs WHERE schedule = $1 AND scheduled_at > $2 AND scheduled_at <= $3 ORDER BY scheduled_at, item, id LIMIT $4`
	deadJobsSQL = `SELECT ` + jobColumns + ` FROM jobs
WHERE state = 'dead' AND schedule IS NOT NULL AND finished_at > $1 ORDER BY finished_at, id LIMIT $2`
	upstreamFailedSkipsSQL = `SELECT ` + store.SkipColumns + ` FROM skips
WHERE schedule = $1 AND recorded_at > $2 AND reason = 'upstream failed' ORDER BY recorded_at, scheduled_at, item LIMIT $3`
	skipsBetweenSQL = `SELECT ` + store.SkipColumns + ` FROM skips
WHERE schedule = $1 AND scheduled_at > $2 AND scheduled_at <= $3 AND reason = $4 ORDER BY scheduled_at, item LIMIT $5`
	// openAlarmsSQL also reads whether a notification is still to end.
	openAlarmsSQL = `SELECT ` + store.Qualified("alarms", store.AlarmColumns) + `, j.state, j.finished_at,
	EXISTS (SELECT 1 FROM jobs n WHERE n.alarm_key = alarms.key AND n.state IN ('pending', 'running'))
FROM alarms LEFT JOIN jobs j ON j.id = alarms.job_id WHERE alarms.open ORDER BY alarms.id LIMIT $1`
	alarmsOfSQL    = `SELECT ` + store.AlarmColumns + ` FROM alarms WHERE schedule = $1 ORDER BY id DESC LIMIT $2`
	lastSuccessSQL = `SELECT finished_at FROM jobs
WHERE schedule = $1 AND scheduled_at IS NOT NULL AND state = 'done' ORDER BY scheduled_at DESC NULLS LAST, id DESC LIMIT 1`
)

// retrySQL revives dead jobs with as many fresh attempts as at first, however
// often revived.
const retrySQL = `UPDATE jobs SET state = 'pending', run_at = $1, retried_at = $1, finished_at = NULL,
	max_attempts = attempt + max_attempts - attempt_base, attempt_base = attempt
WHERE state = 'dead' AND ($2::bigint = 0 OR id = $2::bigint)
RETURNING type, fanin_id`

// retryDiscardedSQL revives a discarded job as retrySQL does a dead one.
const retryDiscardedSQL = `UPDATE jobs SET state = 'pending', run_at = $1, retried_at = $1, finished_at = NULL,
	discarded_at = NULL, discarded_by = NULL,
	max_attempts = attempt + max_attempts - attempt_base, attempt_base = attempt
WHERE state = 'discarded' AND id = $2::bigint
RETURNING type, fanin_id`

const cancelPendingSQL = `UPDATE jobs SET state = 'cancelled', finished_at = $1, cancel_requested_at = $1, cancelled_by = $2,
	last_error = 'cancelled by ' || $2
WHERE id = $3 AND state = 'pending'
RETURNING type, fanin_id`

// cancelRunningSQL marks a running job; a second request keeps the first's
// time and author.
const cancelRunningSQL = `UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, $1), cancelled_by = coalesce(cancelled_by, $2)
WHERE id = $3 AND state = 'running'`
