package sqlite

import (
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The shared flow's statements (store.Statements) in SQLite's dialect:
// instants are Unix milliseconds, lists JSON arrays. INDEXED BY keeps the
// planner, which has no statistics, off indexes that read every job.

const jobColumns = store.JobColumns

var queries = store.Statements{
	Ping: `SELECT (SELECT max(id) FROM jobs), (SELECT count(*) FROM cursors)`,

	JobByID:      `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`,
	JobByKey:     `SELECT ` + jobColumns + ` FROM jobs WHERE key = ?`,
	Dead:         `SELECT ` + jobColumns + ` FROM jobs WHERE state = 'dead' ORDER BY id LIMIT ?`,
	ScheduleJobs: `SELECT ` + jobColumns + ` FROM jobs WHERE schedule = ? ORDER BY scheduled_at DESC, id DESC LIMIT ?`,
	// One walk of jobs_schedule_at per schedule.
	LastRuns: `SELECT ` + jobColumns + ` FROM jobs WHERE id IN (
SELECT (SELECT j.id FROM jobs j WHERE j.schedule = s.schedule ORDER BY j.scheduled_at DESC, j.id DESC LIMIT 1)
FROM (SELECT DISTINCT schedule FROM jobs WHERE schedule IS NOT NULL) s)`,
	LastManualRuns: `SELECT ` + jobColumns + ` FROM jobs WHERE id IN (
SELECT (SELECT j.id FROM jobs j WHERE j.schedule = s.schedule AND j.scheduled_at IS NULL ORDER BY j.id DESC LIMIT 1)
FROM (SELECT DISTINCT schedule FROM jobs WHERE schedule IS NOT NULL) s)`,
	List: listQuery,

	Attempts:       attemptsSQL,
	Counts:         countsSQL,
	ReadySince:     readySinceSQL,
	Pools:          poolsSQL,
	LiveOutput:     liveOutputSQL,
	RateTAT:        `SELECT tat FROM rate_limits WHERE type = ? AND key = ?`,
	CancelRequests: `SELECT id, attempt, cancelled_by FROM jobs WHERE owner = ? AND state = 'running' AND cancel_requested_at IS NOT NULL`,
	LatestLease:    latestLeaseSQL,

	// Three seeks of jobs_schedule_finished per schedule: a discarded job
	// ended when it went dead.
	Finishes: `SELECT n.value,
(SELECT max(finished_at) FROM jobs WHERE schedule = n.value AND state = 'done' AND finished_at IS NOT NULL),
(SELECT max(f) FROM (
	SELECT max(finished_at) AS f FROM jobs WHERE schedule = n.value AND state = 'dead' AND finished_at IS NOT NULL
	UNION ALL
	SELECT max(finished_at) FROM jobs WHERE schedule = n.value AND state = 'discarded' AND finished_at IS NOT NULL))
FROM json_each(?) n`,
	InstantStates: `SELECT state, count(*) FROM jobs WHERE schedule = ? AND scheduled_at = ? GROUP BY state`,
	// Walks jobs_schedule_at's manual runs (scheduled_at NULL, in id
	// order) down from the run's last id.
	ManualRunStates: `SELECT state, count(*) FROM (
SELECT state FROM jobs
WHERE schedule = ?1 AND scheduled_at IS NULL AND id <= ?2 AND substr(key, -length(?4)) = ?4
ORDER BY id DESC LIMIT ?3)
GROUP BY state`,

	SkipsAll:  `SELECT ` + store.SkipColumns + ` FROM skips ORDER BY scheduled_at DESC, schedule DESC, item DESC LIMIT ?`,
	SkipsOf:   `SELECT ` + store.SkipColumns + ` FROM skips WHERE schedule = ? ORDER BY scheduled_at DESC, item DESC LIMIT ?`,
	SkipAt:    `SELECT ` + store.SkipColumns + ` FROM skips WHERE schedule = ? AND item IN (?, '') AND scheduled_at = ? ORDER BY item DESC LIMIT 1`,
	SkipCount: `SELECT count(*) FROM (SELECT 1 FROM skips WHERE schedule = ? AND scheduled_at > ? LIMIT ?)`,
	LastSkip:  `SELECT ` + store.SkipColumns + ` FROM skips WHERE schedule = ? ORDER BY scheduled_at DESC LIMIT 1`,

	AlarmsAll:     `SELECT ` + store.AlarmColumns + ` FROM alarms ORDER BY id DESC LIMIT ?`,
	AlarmsOf:      `SELECT ` + store.AlarmColumns + ` FROM alarms WHERE schedule = ? ORDER BY id DESC LIMIT ?`,
	LastConfig:    `SELECT path, data, sha256, loaded_at FROM running_config WHERE id = 1`,
	Cursors:       `SELECT schedule, at, paused, paused_at FROM cursors`,
	CursorsByName: `SELECT schedule, at, paused, paused_at FROM cursors ORDER BY schedule`, // the primary key's order: bytes

	AlarmMarks: `SELECT schedule, late_at, missed_at, misfire_at, dead_at FROM alarm_marks`,
	// A jobs_schedule_at range; first starts from attempts_job.
	InstantJobs: `SELECT ` + jobColumns + `, (SELECT min(a.started_at) FROM attempts a WHERE a.job_id = jobs.id)
FROM jobs WHERE schedule = ? AND scheduled_at > ? AND scheduled_at <= ? ORDER BY scheduled_at, item, id LIMIT ?`,
	DeadJobs: `SELECT ` + jobColumns + ` FROM jobs INDEXED BY jobs_dead_finished
WHERE state = 'dead' AND schedule IS NOT NULL AND finished_at > ? ORDER BY finished_at, id LIMIT ?`,
	SkipsBetween: `SELECT ` + store.SkipColumns + ` FROM skips
WHERE schedule = ? AND scheduled_at > ? AND scheduled_at <= ? AND reason = ? ORDER BY scheduled_at, item LIMIT ?`,
	UpstreamFailedSkips: `SELECT ` + store.SkipColumns + ` FROM skips
WHERE schedule = ? AND recorded_at > ? AND reason = 'upstream failed' ORDER BY recorded_at, scheduled_at, item LIMIT ?`,
	OpenAlarms: openAlarmsSQL,
	LastSuccess: `SELECT finished_at FROM jobs
WHERE schedule = ? AND scheduled_at IS NOT NULL AND state = 'done' ORDER BY scheduled_at DESC LIMIT 1`,

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
	DiscardIDs: `UPDATE jobs SET state = 'discarded', discarded_at = ?1, discarded_by = ?2
WHERE id IN (SELECT value FROM json_each(?3)) AND state = 'dead' RETURNING id, type`,
	DiscardAll: `UPDATE jobs SET state = 'discarded', discarded_at = ?1, discarded_by = ?2
WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_dead WHERE state = 'dead' AND (?3 = '' OR schedule = ?3)) RETURNING id, type`,
	JobStates:     `SELECT id, state FROM jobs WHERE id IN (SELECT value FROM json_each(?))`,
	CancelState:   `SELECT state FROM jobs WHERE id = ?`,
	CancelPending: cancelPendingSQL,
	CancelRunning: cancelRunningSQL,
	SaveConfig: `INSERT INTO running_config (id, path, data, sha256, loaded_at) VALUES (1, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET path = excluded.path, data = excluded.data, sha256 = excluded.sha256, loaded_at = excluded.loaded_at`,
	SetPaused: `INSERT INTO cursors (schedule, at, paused, paused_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?2)
ON CONFLICT (schedule) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at, updated_at = excluded.updated_at`,

	Cursor:       cursorSQL,
	InsertCursor: insertCursorSQL,
	MoveCursor:   moveCursorSQL,

	InsertAlarm: `INSERT INTO alarms (key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING id`,
	Incidents:   incidentStatements,
	CloseAlarms: `UPDATE alarms SET open = 0 WHERE open = 1 AND id IN (SELECT value FROM json_each(?))`,
	MoveMark: `INSERT INTO alarm_marks (schedule, late_at, missed_at, misfire_at, dead_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (schedule) DO UPDATE SET late_at = max(late_at, excluded.late_at),
missed_at = max(missed_at, excluded.missed_at), misfire_at = max(misfire_at, excluded.misfire_at),
dead_at = max(dead_at, excluded.dead_at), updated_at = excluded.updated_at`,

	Leave: `DELETE FROM pools WHERE owner = ?`,
	PurgeSkips: `DELETE FROM skips WHERE (schedule, item, scheduled_at) IN (
SELECT schedule, item, scheduled_at FROM skips WHERE recorded_at < ? LIMIT ?)`,
	// Alarms are scanned, not indexed by age. A purged one is not raised
	// again: the marks keep its instant from being judged twice.
	PurgeAlarms:     `DELETE FROM alarms WHERE id IN (SELECT id FROM alarms WHERE open = 0 AND raised_at < ? LIMIT ?)`,
	PurgeRateLimits: `DELETE FROM rate_limits WHERE tat < ?`,

	InsertFanIn: `INSERT INTO fanins (key, require, then_job, type, schedule, item, scheduled_at, created_at, updated_at, share_of)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9) ON CONFLICT (key) DO NOTHING RETURNING id`,
	FanInIDByKey:     `SELECT id FROM fanins WHERE key = ?`,
	AdoptMembers:     `UPDATE jobs SET fanin_id = ?1 WHERE id IN (SELECT value FROM json_each(?2))`,
	SetFanInExpected: `UPDATE fanins SET expected = ?1 WHERE id = ?2 OR share_of = ?2`,
	MoveFanIn: `UPDATE fanins SET ended = ended + ?1, done = done + ?2, updated_at = ?3 WHERE id = ?4
RETURNING expected, ended, done, require, state`,
	MoveSharers: `UPDATE fanins SET ended = ended + ?1, done = done + ?2, updated_at = ?3 WHERE share_of = ?4
RETURNING id, expected, ended, done, require, state`,
	FanInThen: `SELECT then_job FROM fanins WHERE id = ?`,
	FanInMembers: `SELECT key, item, state FROM jobs
WHERE fanin_id = (SELECT coalesce(share_of, id) FROM fanins WHERE id = ?) ORDER BY id`,
	FanInInstant: `SELECT schedule, item, scheduled_at, created_at FROM fanins WHERE id = ?`,
	FanInJobs: `SELECT ` + jobColumns + ` FROM jobs
WHERE fanin_id = (SELECT coalesce(share_of, id) FROM fanins WHERE key = ?) ORDER BY id LIMIT ?`,
	SetFanInState: `UPDATE fanins SET state = ?1, job_id = coalesce(?2, job_id), updated_at = ?3 WHERE id = ?4`,
	FanInByKey:    `SELECT ` + store.FanInColumns + ` FROM fanins WHERE key = ?`,
	FanInsOf:      `SELECT ` + store.FanInColumns + ` FROM fanins WHERE schedule = ? AND schedule IS NOT NULL ORDER BY id DESC LIMIT ?`,
	PurgeLive:     purgeLiveSQL,
}

// statements returns the flow's statements as the file can answer them.
func (s *Store) statements() *store.Statements {
	sc := s.schema
	q := queries
	q.Counts = [...]string{countsNone: countEveryJobSQL, countsTable: `SELECT state, type, n FROM job_counts WHERE n != 0`, countsMarked: countsSQL}[sc.counts]
	if s.w == nil {
		// Read-only: the charts read every job, keeping no hours.
		q.ChartMarks, q.ChartHours, q.PutChartHour, q.PurgeChartHours = "", "", "", ""
	}
	if sc.noPools {
		q.Pools = ""
	}
	if sc.noConfig {
		q.LastConfig = ""
	}
	if sc.noFanIns {
		q.FanInByKey, q.FanInsOf, q.FanInJobs = "", "", ""
	}
	if sc.noIncidents {
		q.Incidents = store.IncidentStatements{}
	}
	if sc.noPoolConfig {
		q.Pools = strings.Replace(q.Pools, "config_sha256, nullif(config_at, 0)", "'', NULL", 1)
	}
	if sc.noLive {
		q.LiveOutput, q.PurgeLive = "", ""
		q.Pools = strings.Replace(q.Pools, ", workers", ", 0", 1)
	}
	if sc.noAlarmKey {
		q.OpenAlarms = strings.Replace(q.OpenAlarms, "n.alarm_key = a.key", "0", 1)
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

// jobs returns q, a read of jobColumns, as the file can answer it.
func (sc schema) jobs(q string) string {
	cols := jobColumns
	if sc.noVersions {
		cols = strings.Replace(cols, "finished_at, version", "finished_at, 1", 1)
	}
	if sc.noRetriedAt {
		cols = strings.Replace(cols, ", retried_at", ", NULL", 1)
	}
	if sc.noAlarmKey {
		cols = strings.Replace(cols, ", alarm_key", ", NULL", 1)
	}
	if sc.noDiscarded {
		cols = strings.Replace(cols, ", discarded_at, discarded_by", ", NULL, NULL", 1)
	}
	return strings.ReplaceAll(q, jobColumns, cols)
}

// attemptsSQL lists a job's attempt rows, and a done job's silent success
// from its row.
const attemptsSQL = `SELECT job_id, attempt, worker, started_at, finished_at, outcome, error, output, 0 AS synthetic, id
FROM attempts WHERE job_id = ?1
UNION ALL
SELECT id, attempt, coalesce(owner, ''), coalesce(started_at, finished_at), finished_at, 'done', '', '', 1, 0
FROM jobs WHERE id = ?1 AND state = 'done' AND NOT EXISTS (
	SELECT 1 FROM attempts a WHERE a.job_id = jobs.id AND a.attempt = jobs.attempt AND a.outcome = 'done')
ORDER BY attempt, synthetic, id`

// countEveryJobSQL counts every job, for a read-only file without job_counts.
const countEveryJobSQL = `SELECT state, type, count(*) FROM jobs GROUP BY state, type`

const readySinceSQL = `SELECT type, min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ? GROUP BY type`

const poolsSQL = `SELECT owner, pid, host, version, started_at, seen_at, config_sha256, nullif(config_at, 0), workers
FROM pools ORDER BY seen_at DESC LIMIT 100`

// openAlarmsSQL reads open alarms with their jobs' states, and whether a
// notification is still to end (a jobs_alarm seek).
var openAlarmsSQL = `SELECT ` + openAlarmColumns + `, j.state, j.finished_at,
	EXISTS (SELECT 1 FROM jobs n WHERE n.alarm_key = a.key AND n.state IN ('pending', 'running'))
FROM alarms a LEFT JOIN jobs j ON j.id = a.job_id WHERE a.open = 1 ORDER BY a.id LIMIT ?`

var openAlarmColumns = store.Qualified("a", store.AlarmColumns)

// retrySQL revives dead jobs with as many fresh attempts as they had at
// first, however often revived.
const retrySQL = `UPDATE jobs SET state = 'pending', run_at = ?1, retried_at = ?1, finished_at = NULL,
	max_attempts = attempt + max_attempts - attempt_base, attempt_base = attempt
WHERE state = 'dead' AND (?2 = 0 OR id = ?2)
RETURNING type, fanin_id`

// retryDiscardedSQL revives a discarded job as retrySQL does a dead one.
const retryDiscardedSQL = `UPDATE jobs SET state = 'pending', run_at = ?1, retried_at = ?1, finished_at = NULL,
	discarded_at = NULL, discarded_by = NULL,
	max_attempts = attempt + max_attempts - attempt_base, attempt_base = attempt
WHERE state = 'discarded' AND id = ?2
RETURNING type, fanin_id`

const cancelPendingSQL = `UPDATE jobs SET state = 'cancelled', finished_at = ?1, cancel_requested_at = ?1, cancelled_by = ?2,
	last_error = 'cancelled by ' || ?2
WHERE id = ?3 AND state = 'pending'
RETURNING type, fanin_id`

// cancelRunningSQL marks a running job; a second request keeps the first's
// time and author.
const cancelRunningSQL = `UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, ?1), cancelled_by = coalesce(cancelled_by, ?2)
WHERE id = ?3 AND state = 'running'`
