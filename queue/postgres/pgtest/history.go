package pgtest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// historySQL fills the jobs table in one statement with $1 jobs spread
// evenly, in id order, over the 30 days up to $3 (Unix ms; $2 is 30 days
// before), as the SQLite twin's historySQL does (see it for the mix).
const historySQL = `WITH g AS (SELECT i, i % 20 AS r, ($3::bigint - $2::bigint) / $1::bigint AS sp, $2::bigint + i * (($3::bigint - $2::bigint) / $1::bigint) AS t,
	CASE WHEN i % 20 < 14 THEN i / 20 * 14 + i % 20 END AS f,
	CASE WHEN i % 20 BETWEEN 14 AND 17 THEN i / 20 * 4 + i % 20 - 14 END AS q
	FROM generate_series(0::bigint, $1::bigint - 1) AS i),
k AS (SELECT i, r, t,
	CASE WHEN r < 14 THEN 'fan' || (f / 100 % 10)
		WHEN r < 18 THEN 'sched' || lpad((q % 190)::text, 3, '0') END AS schedule,
	CASE WHEN r < 14 THEN 'n=' || (f % 100) ELSE '' END AS item,
	CASE WHEN r < 14 THEN ($2::bigint + (f / 1000 * 1000 / 14 * 20 + f / 1000 * 1000 % 14) * sp) / 3600000 * 3600000
		WHEN r < 18 THEN ($2::bigint + (q / 190 * 190 / 4 * 20 + 14 + q / 190 * 190 % 4) * sp) / 60000 * 60000 END AS instant,
	CASE WHEN t > $3::bigint - 600000 THEN CASE WHEN i % 5 = 0 THEN 'running' ELSE 'pending' END
		WHEN i % 211 = 0 THEN 'cancelled' WHEN i % 53 = 0 THEN 'dead' ELSE 'done' END AS state,
	(i * 7919) % 3000 AS wait,
	500 + (i * 104729) % 60000 AS took
FROM g),
j AS (SELECT *, least(coalesce(instant, t), $3::bigint) AS due,
	took + CASE WHEN schedule = 'sched000' THEN (t - $2::bigint) / 43200 ELSE 0 END AS ran FROM k)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at,
	lease_until, owner, last_error, created_at, started_at, finished_at)
SELECT CASE WHEN schedule IS NULL THEN 'hist|' || i
	ELSE schedule || '|' || item || '|' || to_char(pg_temp.ms(instant) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') END,
	CASE WHEN schedule IS NULL THEN CASE WHEN i % 2 = 0 THEN 'mail' ELSE 'webhook' END WHEN r < 14 THEN 'fanwork' ELSE 'type0' END,
	CASE WHEN schedule IS NULL THEN '{"to":"user' || (i % 5000) || '@example.com"}' ELSE '{}' END,
	state, CASE WHEN state IN ('pending', 'cancelled') THEN 0 WHEN i % 17 = 0 THEN 2 ELSE 1 END, 3, 0,
	pg_temp.ms(due), schedule, item, pg_temp.ms(instant),
	CASE WHEN state = 'running' THEN pg_temp.ms($3::bigint + 3600000) END, CASE WHEN state = 'running' THEN 'bench-pool' END,
	CASE WHEN state = 'dead' THEN 'exit status 1: upstream refused the connection' ELSE '' END,
	pg_temp.ms(due),
	CASE WHEN state IN ('running', 'done', 'dead') THEN pg_temp.ms(least(due + wait, $3::bigint)) END,
	CASE WHEN state IN ('done', 'dead') THEN pg_temp.ms(due + wait + ran) WHEN state = 'cancelled' THEN pg_temp.ms(due + 60000) END
FROM j`

// msSQL converts Unix milliseconds to an instant, for historySQL.
const msSQL = `CREATE FUNCTION pg_temp.ms(bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS 'SELECT to_timestamp($1 / 1000.0)'`

// historyAlarmsSQL raises a dead alarm per dead job of a schedule, open
// for the last day's.
const historyAlarmsSQL = `INSERT INTO alarms (key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at)
SELECT 'dead|' || id, schedule, item, scheduled_at, 'dead', id, last_error, '{}', finished_at > $1::timestamptz - interval '1 day', finished_at
FROM jobs WHERE state = 'dead' AND schedule IS NOT NULL`

// FillHistory inserts n jobs of 30 days of history up to now into the
// migrated schema of dsn, in one transaction (200 schedules, ten of them
// fan-outs of 100 items, a mix of states; see the SQLite twin,
// sqlitetest.FillHistory), with a dead alarm per dead scheduled job,
// counts them into job_counts as the engine would, and analyses.
func FillHistory(ctx context.Context, dsn string, n int, now time.Time) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	end := now.UnixMilli()
	start := now.Add(-30 * 24 * time.Hour).UnixMilli()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, msSQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, historySQL, n, start, end); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, historyAlarmsSQL, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO job_counts (type, state, slot, n)
SELECT type, state, 1, count(*) FROM jobs GROUP BY type, state`)
		return err
	})
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `VACUUM ANALYZE jobs`)
	return err
}
