package postgres

import (
	"strconv"
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The charts' reads (store.Statements.ActivityAll and the rest). A bucket
// is (instant - from) / size in whole milliseconds, -1 before from.

// bucketOf returns the bucket of instant x, with from $1 and size $2.
func bucketOf(x string) string {
	return strings.ReplaceAll(`CASE WHEN {x} >= $1::timestamptz THEN floor(extract(epoch FROM {x} - $1::timestamptz) * 1000 / $2::bigint)::bigint ELSE -1 END`, "{x}", x)
}

// latencyMS is a started job's start latency in milliseconds.
const latencyMS = `(extract(epoch FROM started_at - run_at) * 1000)`

// markTerm is a job's term of its hour's fingerprint: 1 and its offset in
// the hour, in whole microseconds, exact either way.
func markTerm(offset string) string { return offset + ` + 1` }

// activityAllSQL is an index-only range of jobs_finished per end state.
var activityAllSQL = `SELECT ` + bucketOf("finished_at") + `, state, ` + bucketOf("coalesce(started_at, finished_at)") + `,
` + bucketOf("run_at") + `, CASE WHEN started_at IS NULL THEN -1 ELSE ` + store.LatencyClass(latencyMS) + ` END,
count(*), coalesce(max(` + latencyMS + `), 0)::bigint, sum(` + markTerm("(extract(epoch FROM finished_at - $1::timestamptz) * 1000000)::bigint % ($2::bigint * 1000)") + `)::bigint
FROM jobs WHERE finished_at >= $3::timestamptz AND finished_at < $4::timestamptz AND state IN ('done', 'dead', 'cancelled', 'discarded')
GROUP BY 1, 2, 3, 4, 5`

// chartMarksSQL counts each hour in index-only ranges of jobs_finished of
// its own (one per end state): no grouping, no sort. The series is of integers, whose
// length the planner can see.
var chartMarksSQL = `SELECT h, coalesce(m.print, 0) FROM (SELECT $1::timestamptz + i * $2::bigint * interval '1 millisecond' AS h
	FROM generate_series(0, ceil(extract(epoch FROM $3::timestamptz - $1::timestamptz) * 1000 / $2::bigint)::bigint - 1) i) hs
CROSS JOIN LATERAL (SELECT sum(` + markTerm("(date_part('epoch', finished_at - h) * 1000000)::bigint") + `)::bigint AS print FROM jobs
	WHERE finished_at >= h AND finished_at < h + $2::bigint * interval '1 millisecond' AND state IN ('done', 'dead', 'cancelled', 'discarded')) m`

const (
	chartHoursSQL   = `SELECT hour, fingerprint, groups FROM chart_hours WHERE hour >= $1 AND hour < $2`
	putChartHourSQL = `INSERT INTO chart_hours (hour, fingerprint, groups) VALUES ($1, $2, $3)
ON CONFLICT (hour) DO UPDATE SET fingerprint = excluded.fingerprint, groups = excluded.groups`
	purgeChartHoursSQL = `DELETE FROM chart_hours WHERE hour < $1`
)

// activityOfSQL is three ranges of jobs_schedule_finished.
const activityOfSQL = `SELECT floor(extract(epoch FROM finished_at - $2::timestamptz) * 1000 / $3::bigint)::bigint, state, count(*) FROM jobs
WHERE schedule = $1 AND state IN ('done', 'dead', 'cancelled', 'discarded') AND finished_at >= $2::timestamptz
GROUP BY 1, 2`

// queuedSQL reads jobs_ready's due jobs and jobs_lease.
var queuedSQL = `SELECT ` + bucketOf("run_at") + `, ` + strconv.Itoa(store.StillWaiting) + `::bigint, count(*) FROM jobs
WHERE state = 'pending' AND run_at < $3 GROUP BY 1
UNION ALL
SELECT ` + bucketOf("run_at") + `, ` + bucketOf("started_at") + `, count(*) FROM jobs
WHERE state = 'running' AND run_at < $3 GROUP BY 1, 2`

// runTimingsSQL walks jobs_schedule_at down to the limit's instants, then
// reads their jobs.
const runTimingsSQL = `SELECT scheduled_at, min(started_at), max(finished_at), count(*)::bigint,
count(*) FILTER (WHERE state IN ('dead', 'discarded')), count(finished_at)
FROM jobs WHERE schedule = $1 AND scheduled_at IN (
SELECT DISTINCT scheduled_at FROM jobs WHERE schedule = $1 AND scheduled_at IS NOT NULL ORDER BY scheduled_at DESC LIMIT $2)
GROUP BY scheduled_at ORDER BY scheduled_at`
