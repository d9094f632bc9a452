package queue

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// presenceEvery is how often a running pool renews its row in the pools
// table; presenceStale is how old a row may be and still count as a running
// pool's (a crashed pool's row is left behind).
const (
	presenceEvery = 30 * time.Second
	presenceStale = 3 * presenceEvery
)

// presenceSQL records the types a pool has handlers for, and that it runs.
const presenceSQL = `INSERT INTO pools (owner, types, started_at, seen_at) VALUES (?1, ?2, ?3, ?3)
ON CONFLICT (owner) DO UPDATE SET types = excluded.types, seen_at = excluded.seen_at`

const absentSQL = `DELETE FROM pools WHERE owner = ?`

// Waiting is a job type with ready jobs that no running pool has a
// handler for: they stay pending until one has.
type Waiting struct {
	Type   string
	Ready  int           // its jobs ready to run
	Oldest time.Duration // how long its oldest ready job has waited
}

// Handlers is what the running pools on a queue can run.
type Handlers struct {
	// Known is false when the file predates the record of pools (no pool
	// of this version has run on it): then nothing below is known.
	Known bool
	// Pools counts the running pools (a pool that stopped without saying
	// so counts until its record is 90 s old).
	Pools int
	// Waiting lists, by type, the ready jobs that none of them can run.
	Waiting []Waiting
}

const poolsTableSQL = `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'pools'`

const livePoolsSQL = `SELECT count(*) FROM pools WHERE seen_at >= ?`

// waitingSQL reads every ready job once (as Stats does), through the claim
// index: the type index would make SQLite walk every job of every type.
const waitingSQL = `SELECT type, count(*), min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1
	AND type NOT IN (SELECT t.value FROM pools, json_each(pools.types) AS t WHERE pools.seen_at >= ?2)
GROUP BY type ORDER BY type`

// Handlers reports which ready jobs wait for a handler: the types that no
// running pool, in this process or another, has registered.
func (q *Queue) Handlers(ctx context.Context) (Handlers, error) {
	var h Handlers
	var n int
	if err := q.r.QueryRowContext(ctx, poolsTableSQL).Scan(&n); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	if n == 0 {
		return h, nil
	}
	h.Known = true
	now := q.clock.Now()
	live := ms(now.Add(-presenceStale))
	if err := q.r.QueryRowContext(ctx, livePoolsSQL, live).Scan(&h.Pools); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	rows, err := q.r.QueryContext(ctx, waitingSQL, ms(now), live)
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var w Waiting
		var oldest sql.NullInt64
		if err := rows.Scan(&w.Type, &w.Ready, &oldest); err != nil {
			return h, fmt.Errorf("handlers: %w", err)
		}
		w.Oldest = now.Sub(time.UnixMilli(oldest.Int64))
		h.Waiting = append(h.Waiting, w)
	}
	if err := rows.Err(); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	return h, nil
}
