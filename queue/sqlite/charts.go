package sqlite

import (
	"strconv"
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The charts' reads (store.Statements.ActivityAll and the rest). A bucket
// is (instant - from) / size, -1 before from.

// bucketOf returns the bucket of instant x, with from ?1 and size ?2.
func bucketOf(x string) string {
	return strings.ReplaceAll(`CASE WHEN {x} >= ?1 THEN ({x} - ?1) / ?2 ELSE -1 END`, "{x}", x)
}

// markTerm is a job's term of its hour's fingerprint: 1 and its offset in
// the hour, in ms.
func markTerm(offset string) string { return offset + ` + 1` }

// activityAllSQL is a range of jobs_finished per end state, which covers it.
var activityAllSQL = `SELECT ` + bucketOf("finished_at") + `, state, ` + bucketOf("coalesce(started_at, finished_at)") + `,
` + bucketOf("run_at") + `, CASE WHEN started_at IS NULL THEN -1 ELSE ` + store.LatencyClass("(started_at - run_at)") + ` END,
count(*), coalesce(max(started_at - run_at), 0), sum(` + markTerm("(finished_at - ?1) % ?2") + `)
FROM jobs WHERE finished_at >= ?3 AND finished_at < ?4 AND state IN ('done', 'dead', 'cancelled', 'discarded')
GROUP BY 1, 2, 3, 4, 5`

// chartMarksSQL counts each hour in ranges of jobs_finished of its own
// (one per end state): no grouping, no sort.
var chartMarksSQL = `WITH RECURSIVE h(t) AS (SELECT ?1 WHERE ?1 < ?3 UNION ALL SELECT t + ?2 FROM h WHERE t + ?2 < ?3)
SELECT t, (SELECT coalesce(sum(` + markTerm("finished_at - h.t") + `), 0) FROM jobs
	WHERE finished_at >= h.t AND finished_at < h.t + ?2 AND state IN ('done', 'dead', 'cancelled', 'discarded'))
FROM h`

const (
	chartHoursSQL   = `SELECT hour, fingerprint, groups FROM chart_hours WHERE hour >= ? AND hour < ?`
	putChartHourSQL = `INSERT INTO chart_hours (hour, fingerprint, groups) VALUES (?, ?, ?)
ON CONFLICT (hour) DO UPDATE SET fingerprint = excluded.fingerprint, groups = excluded.groups`
	purgeChartHoursSQL = `DELETE FROM chart_hours WHERE hour < ?`
)

// activityOfSQL is three ranges of jobs_schedule_finished.
const activityOfSQL = `SELECT (finished_at - ?2) / ?3, state, count(*) FROM jobs
WHERE schedule = ?1 AND state IN ('done', 'dead', 'cancelled', 'discarded') AND finished_at >= ?2
GROUP BY 1, 2`

// queuedSQL walks jobs_ready's due jobs and jobs_lease.
var queuedSQL = `SELECT ` + bucketOf("run_at") + `, ` + strconv.Itoa(store.StillWaiting) + `, count(*) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at < ?3 GROUP BY 1
UNION ALL
SELECT ` + bucketOf("run_at") + `, ` + bucketOf("started_at") + `, count(*) FROM jobs INDEXED BY jobs_lease
WHERE state = 'running' AND run_at < ?3 GROUP BY 1, 2`

// runTimingsSQL walks jobs_schedule_at down to the limit's instants, then
// reads their jobs.
const runTimingsSQL = `SELECT scheduled_at, min(started_at), max(finished_at), count(*), sum(state IN ('dead', 'discarded')), count(finished_at)
FROM jobs WHERE schedule = ?1 AND scheduled_at IN (
SELECT DISTINCT scheduled_at FROM jobs WHERE schedule = ?1 AND scheduled_at IS NOT NULL ORDER BY scheduled_at DESC LIMIT ?2)
GROUP BY scheduled_at ORDER BY scheduled_at`
