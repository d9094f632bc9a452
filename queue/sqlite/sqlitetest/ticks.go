package sqlitetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// ticksSQL inserts the done jobs of ?3 ticks, ?4 ms apart from ?2 (Unix ms),
// of the schedules of the JSON array ?1, one item each, of the task ?5, in
// the order the beat commits them: tick by tick, each tick's schedules in
// the order of their names. Each row is as a pool leaves it: done on its
// first attempt by one of eight workers, started 10 ms after its instant
// and ended 40 ms later.
const ticksSQL = `WITH RECURSIVE t(k, at) AS (SELECT 0, ?2 UNION ALL SELECT k + 1, at + ?4 FROM t WHERE k + 1 < ?3)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at,
	owner, last_error, created_at, started_at, finished_at)
SELECT s.value || '||' || strftime('%Y-%m-%dT%H:%M:%SZ', at / 1000, 'unixepoch'), ?5, '{}', 'done', 1, 5, 0,
	at, s.value, '', at, 'bench:4242:c0ffee/w' || (k % 8), '', at, at + 10, at + 50
FROM t, json_each(?1) AS s
ORDER BY k, s.value`

// FillTicks inserts the done jobs of ticks earlier ticks of schedules (one
// item each, of task, every every from first) into the migrated queue file
// at path, which no store may have open, in one transaction, with the keys
// the beat gives them and the columns a pool leaves, then counts them as
// the engine would and checkpoints: the history a daemon's file holds
// until retain_done purges it. It does not analyse, as a daemon does not.
func FillTicks(ctx context.Context, path string, schedules []string, task string, first time.Time, every time.Duration, ticks int) error {
	names, err := json.Marshal(schedules)
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The indexes that begin with the schedule take the rows all over: a
	// cache that holds them keeps the fill in memory until the commit.
	if _, err := db.ExecContext(ctx, "PRAGMA cache_size = -1000000"); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, ticksSQL, string(names), first.UnixMilli(), ticks, every.Milliseconds(), task); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, countSQL); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}
