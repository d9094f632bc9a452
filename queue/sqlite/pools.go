package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"scheduler/queue/store"
)

// A running pool keeps one row in the pools table: the types it has handlers
// for and the process it runs in. It renews the row every presenceEvery, in
// the same transaction as whatever else its loop writes then: every write
// wakes the watches of the other processes on the file, so an idle pool
// writes no more often than this.
const (
	presenceEvery = store.PresenceEvery
	presenceKept  = store.PresenceKept
)

// presenceSQL records that a pool runs and the types it has handlers for.
// A row deleted by hand, or by a pool that took this one for long gone, is
// written again.
const presenceSQL = `INSERT INTO pools (owner, types, pid, host, version, started_at, seen_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
ON CONFLICT (owner) DO UPDATE SET types = excluded.types, seen_at = excluded.seen_at`

// forgetPoolsSQL deletes the rows of pools gone for presenceKept.
const forgetPoolsSQL = `DELETE FROM pools WHERE seen_at < ?`

const absentSQL = `DELETE FROM pools WHERE owner = ?`

// present writes owner's row at now with the types all (a JSON array).
// The first write of a pool also forgets the pools gone for a week.
func present(ctx context.Context, tx txn, owner string, pr store.Process, all string, now time.Time, first bool) error {
	if first {
		if _, err := tx.exec(ctx, forgetPoolsSQL, ms(now.Add(-presenceKept))); err != nil {
			return fmt.Errorf("forget old pools: %w", err)
		}
	}
	if _, err := tx.exec(ctx, presenceSQL, owner, all, pr.PID, pr.Host, pr.Version, ms(now)); err != nil {
		return fmt.Errorf("record pool: %w", err)
	}
	return nil
}

const poolsTableSQL = `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'pools'`

const livePoolsSQL = `SELECT count(*) FROM pools WHERE seen_at >= ?`

// waitingSQL reads every ready job once (as Stats does), through the claim
// index: the type index would make SQLite walk every job of every type.
// Handlers runs it only when some type with pending jobs has no handler.
const waitingSQL = `SELECT type, count(*), min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1
	AND type NOT IN (SELECT t.value FROM pools, json_each(pools.types) AS t WHERE pools.seen_at >= ?2)
GROUP BY type ORDER BY type`

// unhandledSQL finds, from job_counts, the types with pending jobs that no
// live pool has a handler for: usually none, and then Handlers reads no job.
const unhandledSQL = `SELECT count(*) FROM job_counts
WHERE state = 'pending' AND n > 0
	AND type NOT IN (SELECT t.value FROM pools, json_each(pools.types) AS t WHERE pools.seen_at >= ?1)`

// hasPools reports whether the file has the pools table: a database
// written by an older program, opened read-only, may not.
func (s *Store) hasPools(ctx context.Context) (bool, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, poolsTableSQL).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// Handlers reports which ready jobs wait for a handler: the types that no
// running pool, in this process or another, has registered.
func (s *Store) Handlers(ctx context.Context) (store.Handlers, error) {
	var h store.Handlers
	ok, err := s.hasPools(ctx)
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	if !ok {
		return h, nil
	}
	h.Known = true
	now := s.clock.Now()
	live := ms(now.Add(-store.AliveWithin))
	if err := s.r.QueryRowContext(ctx, livePoolsSQL, live).Scan(&h.Pools); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	var kept int
	if err := s.r.QueryRowContext(ctx, countsTableSQL).Scan(&kept); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	if kept > 0 {
		var unhandled int
		if err := s.r.QueryRowContext(ctx, unhandledSQL, live).Scan(&unhandled); err != nil {
			return h, fmt.Errorf("handlers: %w", err)
		}
		if unhandled == 0 {
			return h, nil
		}
	}
	rows, err := s.r.QueryContext(ctx, waitingSQL, ms(now), live)
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var w store.Waiting
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

const daemonsSQL = `SELECT owner, pid, host, version, started_at, seen_at FROM pools ORDER BY seen_at DESC LIMIT 100`

// Daemons returns the recorded pools, most recently seen first (at most
// 100): the running ones and those that crashed in the last week. A
// database written by a program that records no pools, opened read-only,
// has none.
func (s *Store) Daemons(ctx context.Context) ([]store.Daemon, error) {
	ok, err := s.hasPools(ctx)
	if err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	if !ok {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, daemonsSQL)
	if err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	defer rows.Close()
	var out []store.Daemon
	for rows.Next() {
		var d store.Daemon
		var st, seen int64
		if err := rows.Scan(&d.Owner, &d.PID, &d.Host, &d.Version, &st, &seen); err != nil {
			return nil, fmt.Errorf("read daemons: %w", err)
		}
		d.StartedAt, d.LastSeen = time.UnixMilli(st).UTC(), time.UnixMilli(seen).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	return out, nil
}
