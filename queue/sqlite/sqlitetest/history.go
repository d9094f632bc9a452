package sqlitetest

import (
	"context"
	"database/sql"
	"time"
)

// historySQL fills the jobs table in one statement with ?1 jobs spread
// evenly, in id order, over the 30 days up to ?3 (Unix ms; ?2 is 30 days
// before): of every twenty, fourteen are items n=0 to n=99 of the
// fan-outs fan0 to fan9 (type fanwork; the thousand of a round share its
// hour as their instant), four are runs of the schedules sched000 to
// sched189 (type type0; the 190 of a round share its minute), and two are
// jobs of no schedule (types mail and webhook). Keys are the beat's
// (schedule|item|instant), hist|i for the others. Those of the last
// ten minutes are pending, or running one in five; of the others one in
// 211 is cancelled, one in 53 dead, the rest done; one in 17 took two
// attempts. Each waited up to 3 s and ran 0.5 to 60.5 s; sched000's runs
// grow slower by a minute a month.
const historySQL = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1),
g AS (SELECT i, i % 20 AS r, (?3 - ?2) / ?1 AS sp, ?2 + i * ((?3 - ?2) / ?1) AS t,
	CASE WHEN i % 20 < 14 THEN i / 20 * 14 + i % 20 END AS f,
	CASE WHEN i % 20 BETWEEN 14 AND 17 THEN i / 20 * 4 + i % 20 - 14 END AS q FROM n),
k AS (SELECT i, r, t,
	CASE WHEN r < 14 THEN 'fan' || (f / 100 % 10)
		WHEN r < 18 THEN 'sched' || substr('00' || (q % 190), -3) END AS schedule,
	CASE WHEN r < 14 THEN 'n=' || (f % 100) ELSE '' END AS item,
	CASE WHEN r < 14 THEN (?2 + (f / 1000 * 1000 / 14 * 20 + f / 1000 * 1000 % 14) * sp) / 3600000 * 3600000
		WHEN r < 18 THEN (?2 + (q / 190 * 190 / 4 * 20 + 14 + q / 190 * 190 % 4) * sp) / 60000 * 60000 END AS instant,
	CASE WHEN t > ?3 - 600000 THEN CASE WHEN i % 5 = 0 THEN 'running' ELSE 'pending' END
		WHEN i % 211 = 0 THEN 'cancelled' WHEN i % 53 = 0 THEN 'dead' ELSE 'done' END AS state,
	(i * 7919) % 3000 AS wait,
	500 + (i * 104729) % 60000 AS took
FROM g),
j AS (SELECT *, min(coalesce(instant, t), ?3) AS due,
	took + CASE WHEN schedule = 'sched000' THEN (t - ?2) / 43200 ELSE 0 END AS ran FROM k)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at,
	lease_until, owner, last_error, created_at, started_at, finished_at)
SELECT CASE WHEN schedule IS NULL THEN 'hist|' || i
	ELSE schedule || '|' || item || '|' || strftime('%Y-%m-%dT%H:%M:%SZ', instant / 1000, 'unixepoch') END,
	CASE WHEN schedule IS NULL THEN CASE WHEN i % 2 = 0 THEN 'mail' ELSE 'webhook' END WHEN r < 14 THEN 'fanwork' ELSE 'type0' END,
	CASE WHEN schedule IS NULL THEN '{"to":"user' || (i % 5000) || '@example.com"}' ELSE '{}' END,
	state, CASE WHEN state IN ('pending', 'cancelled') THEN 0 WHEN i % 17 = 0 THEN 2 ELSE 1 END, 3, 0,
	due, schedule, item, instant,
	CASE WHEN state = 'running' THEN ?3 + 3600000 END, CASE WHEN state = 'running' THEN 'bench-pool' END,
	CASE WHEN state = 'dead' THEN 'exit status 1: upstream refused the connection' ELSE '' END,
	due,
	CASE WHEN state IN ('running', 'done', 'dead') THEN min(due + wait, ?3) END,
	CASE WHEN state IN ('done', 'dead') THEN due + wait + ran WHEN state = 'cancelled' THEN due + 60000 END
FROM j`

// historyAlarmsSQL raises a dead alarm per dead job of a schedule, open
// for the last day's.
const historyAlarmsSQL = `INSERT INTO alarms (key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at)
SELECT 'dead|' || id, schedule, item, scheduled_at, 'dead', id, last_error, '{}', CASE WHEN finished_at > ?1 - 86400000 THEN 1 ELSE 0 END, finished_at
FROM jobs WHERE state = 'dead' AND schedule IS NOT NULL AND 1`

// FillHistory inserts n jobs of 30 days of history up to now into the
// migrated queue file at path, which no store may have open, in one
// transaction (see historySQL: 200 schedules, ten of them fan-outs of 100
// items, a mix of states), with a dead alarm per dead scheduled job; it
// counts them as the engine would and analyses. It is the SQLite twin of
// pgtest.FillHistory.
func FillHistory(ctx context.Context, path string, n int, now time.Time) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	end := now.UnixMilli()
	start := now.Add(-30 * 24 * time.Hour).UnixMilli()
	for _, q := range []struct {
		sql  string
		args []any
	}{{historySQL, []any{n, start, end}}, {historyAlarmsSQL, []any{end}}, {countSQL, nil}} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "ANALYZE")
	return err
}
