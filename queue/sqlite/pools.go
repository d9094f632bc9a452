package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
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

// presenceSQL records that a pool runs, the types it has handlers for and
// the versions it accepts of them. A row deleted by hand, or by a pool that
// took this one for long gone, is written again.
const presenceSQL = `INSERT INTO pools (owner, types, pid, host, version, started_at, seen_at, versions, config_sha256, config_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9)
ON CONFLICT (owner) DO UPDATE SET types = excluded.types, versions = excluded.versions, seen_at = excluded.seen_at,
	config_sha256 = excluded.config_sha256, config_at = excluded.config_at`

// forgetPoolsSQL deletes the rows of pools gone for presenceKept.
const forgetPoolsSQL = `DELETE FROM pools WHERE seen_at < ?`

const absentSQL = `DELETE FROM pools WHERE owner = ?`

// present writes owner's row at now with the types all (a JSON array) and
// the versions it accepts (a JSON object). The first write of a pool also
// forgets the pools gone for a week.
func present(ctx context.Context, tx txn, owner string, pr store.Process, all, versions string, now time.Time, first bool) error {
	if first {
		if _, err := tx.exec(ctx, forgetPoolsSQL, ms(now.Add(-presenceKept))); err != nil {
			return fmt.Errorf("forget old pools: %w", err)
		}
	}
	if _, err := tx.exec(ctx, presenceSQL, owner, all, pr.PID, pr.Host, pr.Version, ms(now), versions, pr.Config, configAt(pr)); err != nil {
		return fmt.Errorf("record pool: %w", err)
	}
	return nil
}

// configAt is pr.ConfigAt as stored: 0 without a config.
func configAt(pr store.Process) int64 {
	if pr.Config == "" || pr.ConfigAt.IsZero() {
		return 0
	}
	return ms(pr.ConfigAt)
}

const poolsTableSQL = `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'pools'`

// livePoolsSQL reads what the live pools take. A file written by a program
// older than job versions has no versions column (opened read-only, it is
// not migrated): see livePoolsOldSQL.
const (
	livePoolsSQL    = `SELECT types, versions FROM pools WHERE seen_at >= ?`
	livePoolsOldSQL = `SELECT types, '{}' FROM pools WHERE seen_at >= ?`
)

// waitingSQL reads every ready job once (as Stats does), through the claim
// index: the type index would make SQLite walk every job of every type.
// It counts, by type and version, the jobs that no live pool takes: ?2
// and ?3 are what they take together, in the form of claimableJobs.
// Handlers runs it only when some job may wait: a type with pending jobs
// and no handler, a pending job of another version than 1, or a pool that
// takes some type at other versions than 1 alone.
const waitingSQL = `SELECT type, version, count(*), min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1
	AND NOT (version = 1 AND type IN (SELECT value FROM json_each(?2))
		OR version <> 1 AND (type, version) IN (SELECT value->>0, value->>1 FROM json_each(?3)))
GROUP BY type, version ORDER BY type, version`

// waitingOldSQL is waitingSQL on a file without job versions.
const waitingOldSQL = `SELECT type, 1, count(*), min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1 AND type NOT IN (SELECT value FROM json_each(?2))
GROUP BY type ORDER BY type`

// unhandledSQL finds, from the job counts, the types with pending jobs
// that no live pool has a handler for: usually none, and then Handlers
// reads no job, unless versionedSQL finds one.
const unhandledSQL = `SELECT count(*) FROM job_counts_now
WHERE state = 'pending' AND n > 0
	AND type NOT IN (SELECT value FROM json_each(?1))`

// unhandledUnmarkedSQL is unhandledSQL on a file older than the count
// mark, opened read-only.
const unhandledUnmarkedSQL = `SELECT count(*) FROM job_counts
WHERE state = 'pending' AND n > 0
	AND type NOT IN (SELECT value FROM json_each(?1))`

// versionedSQL tells whether a pending job of another version than 1
// exists, from the partial index of those: none, the common case, reads
// nothing.
const versionedSQL = `SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_versioned WHERE state = 'pending' AND version <> 1)`

const versionsColumnSQL = `SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'version'`

// retriedAtColumnSQL tells whether the file's jobs record an operator's
// retries (1) or not (0).
const retriedAtColumnSQL = `SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'retried_at'`

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
// running pool, in this process or another, has registered, and the
// versions of a registered type that none of them accepts.
func (s *Store) Unhandled(ctx context.Context) (store.Unhandled, error) {
	var h store.Unhandled
	ok, err := s.hasPools(ctx)
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	if !ok {
		return h, nil
	}
	h.Known = true
	versioned := !s.noVersions
	now := s.clock.Now()
	live := ms(now.Add(-store.AliveWithin))
	q := livePoolsSQL
	if !versioned {
		q = livePoolsOldSQL
	}
	pools, err := s.livePools(ctx, q, live)
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	h.Pools = len(pools)
	accepted := store.Accepted(pools)
	handled := make([]string, 0, len(accepted))
	others := false // a pool takes some type at other versions than 1 alone
	for t, vs := range accepted {
		handled = append(handled, t)
		others = others || len(vs) != 1 || vs[0] != 1
	}
	sort.Strings(handled)
	all := versions(accepted)
	plain, pairs := all.Split(handled)
	var kept int
	if err := s.r.QueryRowContext(ctx, countsKeptSQL).Scan(&kept); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	if kept > 0 && !others {
		var unhandled, waiting int
		q := [...]string{"", unhandledUnmarkedSQL, unhandledSQL}[kept]
		if err := s.r.QueryRowContext(ctx, q, s.types.json(handled)).Scan(&unhandled); err != nil {
			return h, fmt.Errorf("handlers: %w", err)
		}
		if unhandled == 0 && versioned {
			if err := s.r.QueryRowContext(ctx, versionedSQL).Scan(&waiting); err != nil {
				return h, fmt.Errorf("handlers: %w", err)
			}
		}
		if unhandled == 0 && waiting == 0 {
			return h, nil
		}
	}
	var rows *sql.Rows
	if versioned {
		rows, err = s.r.QueryContext(ctx, waitingSQL, ms(now), s.types.json(plain), pairsJSON(pairs))
	} else {
		rows, err = s.r.QueryContext(ctx, waitingOldSQL, ms(now), s.types.json(handled))
	}
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	defer rows.Close()
	var byVersion []store.Waiting
	for rows.Next() {
		var w store.Waiting
		var oldest sql.NullInt64
		if err := rows.Scan(&w.Type, &w.Version, &w.Ready, &oldest); err != nil {
			return h, fmt.Errorf("handlers: %w", err)
		}
		w.Oldest = now.Sub(time.UnixMilli(oldest.Int64))
		byVersion = append(byVersion, w)
	}
	if err := rows.Err(); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	h.Waiting = store.MergeWaiting(byVersion, accepted)
	return h, nil
}

// versions returns accepted, the union of what pools take, as the
// Versions of a pool that took it all.
func versions(accepted map[string][]int) store.Versions {
	vs := store.Versions{}
	for t, v := range accepted {
		if len(v) != 1 || v[0] != 1 {
			vs[t] = v
		}
	}
	return vs
}

// livePools reads the types and versions of the pools seen since live.
func (s *Store) livePools(ctx context.Context, q string, live int64) ([]store.PoolTypes, error) {
	rows, err := s.r.QueryContext(ctx, q, live)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.PoolTypes
	for rows.Next() {
		var types, versions string
		if err := rows.Scan(&types, &versions); err != nil {
			return nil, err
		}
		var p store.PoolTypes
		if err := json.Unmarshal([]byte(types), &p.Types); err != nil {
			return nil, fmt.Errorf("pool types: %w", err)
		}
		if err := json.Unmarshal([]byte(versions), &p.Versions); err != nil {
			return nil, fmt.Errorf("pool versions: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// presenceVersionsJSON returns a pool's versions as a JSON object: "{}"
// for none, the common case.
func presenceVersionsJSON(vs store.Versions) string {
	if len(vs) == 0 {
		return "{}"
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// daemonsSQL reads the pools' rows. A file written by a program older
// than the record of configs has no config columns (opened read-only, it
// is not migrated): see daemonsOldSQL.
const (
	daemonsSQL    = `SELECT owner, pid, host, version, started_at, seen_at, config_sha256, config_at FROM pools ORDER BY seen_at DESC LIMIT 100`
	daemonsOldSQL = `SELECT owner, pid, host, version, started_at, seen_at, '', 0 FROM pools ORDER BY seen_at DESC LIMIT 100`
)

const poolConfigColumnSQL = `SELECT count(*) FROM pragma_table_info('pools') WHERE name = 'config_sha256'`

// Daemons returns the recorded pools, most recently seen first (at most
// 100): the running ones and those that crashed in the last week. A
// database written by a program that records no pools, opened read-only,
// has none.
func (s *Store) Pools(ctx context.Context) ([]store.PoolRow, error) {
	ok, err := s.hasPools(ctx)
	if err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	if !ok {
		return nil, nil
	}
	q := daemonsSQL
	if s.noPoolConfig {
		q = daemonsOldSQL
	}
	rows, err := s.r.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	defer rows.Close()
	var out []store.PoolRow
	for rows.Next() {
		var d store.PoolRow
		var st, seen, loaded int64
		if err := rows.Scan(&d.Owner, &d.PID, &d.Host, &d.Version, &st, &seen, &d.Config, &loaded); err != nil {
			return nil, fmt.Errorf("read daemons: %w", err)
		}
		d.StartedAt, d.LastSeen = time.UnixMilli(st).UTC(), time.UnixMilli(seen).UTC()
		if d.Config != "" && loaded != 0 {
			d.ConfigAt = time.UnixMilli(loaded).UTC()
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	return out, nil
}
