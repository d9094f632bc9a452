package postgres

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// retrySQL revives dead jobs with as many fresh attempts as they had at
// first (max_attempts - attempt_base), however often they were revived
// before; the count of attempts spent is kept, so the history stays in
// order and a late result of an old attempt stays fenced off. retried_at
// records the operator's retry, from which the job's give_up_after budget
// counts again.
const retrySQL = `UPDATE jobs SET state = 'pending', run_at = $1, retried_at = $1, finished_at = NULL,
	max_attempts = attempt + max_attempts - attempt_base, attempt_base = attempt
WHERE state = 'dead' AND ($2::bigint = 0 OR id = $2::bigint)
RETURNING type`

// Retry makes the dead job id pending again, to run at once with a fresh
// set of attempts, or returns ErrNotFound.
func (s *Store) Retry(ctx context.Context, id int64) error {
	if id <= 0 {
		return fmt.Errorf("retry job %d: %w", id, store.ErrNotFound)
	}
	n, err := s.retry(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("retry job %d: no dead job with that id: %w", id, store.ErrNotFound)
	}
	return nil
}

// RetryAllDead makes every dead job pending again and returns how many.
func (s *Store) RetryAllDead(ctx context.Context) (int64, error) { return s.retry(ctx, 0) }

func (s *Store) retry(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx, d store.CountDeltas) error {
		rows, err := tx.Query(ctx, retrySQL, ts(s.now()), id)
		n, err = moveTypes(rows, err, d, store.StateDead, store.StatePending)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retry dead jobs: %w", err)
	}
	if n > 0 {
		s.wake()
	}
	return n, nil
}

const cancelPendingSQL = `UPDATE jobs SET state = 'cancelled', finished_at = $1, cancel_requested_at = $1, cancelled_by = $2,
	last_error = 'cancelled by ' || $2
WHERE id = $3 AND state = 'pending'
RETURNING type`

// cancelRunningSQL records the request on a running job; a second request
// keeps the first one's time and author.
const cancelRunningSQL = `UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, $1), cancelled_by = coalesce(cancelled_by, $2)
WHERE id = $3 AND state = 'running'`

// RequestCancel cancels job id on behalf of by and returns the state the
// job was in. A request on a running job notifies the pools, so that the
// one holding its lease, on any node, stops it.
func (s *Store) RequestCancel(ctx context.Context, id int64, by string) (store.State, error) {
	var st store.State
	by = cleanText(by)
	err := s.inTx(ctx, func(tx pgx.Tx, d store.CountDeltas) error {
		if err := tx.QueryRow(ctx, `SELECT state FROM jobs WHERE id = $1 FOR UPDATE`, id).Scan(&st); err != nil {
			if errNoRows(err) {
				return store.ErrNotFound
			}
			return err
		}
		now := ts(s.now())
		switch st {
		case store.StatePending:
			rows, err := tx.Query(ctx, cancelPendingSQL, now, by, id)
			_, err = moveTypes(rows, err, d, store.StatePending, store.StateCancelled)
			return err
		case store.StateRunning:
			_, err := tx.Exec(ctx, cancelRunningSQL, now, by, id)
			return err
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("cancel job %d: %w", id, err)
	}
	if st == store.StateRunning {
		s.notifyCancel()
	}
	return st, nil
}

// reclaimExpired returns running jobs whose lease expired to pending, or to dead
// when they have no attempt left, or to cancelled when a cancel was
// requested, and records the lost attempts.
func (s *Store) reclaimExpired(ctx context.Context) (int, error) {
	var rs []store.Reclaimed
	err := s.inTx(ctx, func(tx pgx.Tx, d store.CountDeltas) error {
		now := ts(s.now())
		expired, err := s.expired(ctx, tx, now)
		if err != nil {
			return fmt.Errorf("reclaim: %w", err)
		}
		rs, err = reclaim(ctx, tx, d, now, expired)
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		s.log.WarnContext(ctx, "job lease reclaimed", "component", "maintenance",
			"job_id", r.ID, "attempt", r.Attempt, "owner", r.Owner, "dead", r.Dead)
	}
	if len(rs) > 0 {
		s.wake()
	}
	return len(rs), nil
}

// purgeDoneSQL deletes one batch of old done jobs (their attempts go with
// them, ON DELETE CASCADE) and keeps their keys, except generated ones, in
// used_keys, in one statement: both parts read the batch b.
const purgeDoneSQL = `WITH b AS (
	SELECT id, key, finished_at FROM jobs WHERE state = 'done' AND finished_at < $1
	ORDER BY finished_at, id LIMIT $2
	FOR UPDATE SKIP LOCKED
), k AS (
	INSERT INTO used_keys (key, finished_at)
	SELECT key, finished_at FROM b WHERE key !~ '` + generatedKey + `'
	ON CONFLICT (key) DO NOTHING
)
DELETE FROM jobs USING b WHERE jobs.id = b.id
RETURNING jobs.type`

const purgeSkipsSQL = `DELETE FROM skips WHERE (schedule, item, scheduled_at) IN (
	SELECT schedule, item, scheduled_at FROM skips WHERE recorded_at < $1 LIMIT $2)`

// purgeAlarmsSQL deletes closed alarms raised before $1, at most $2 (see
// the SQLite engine's: the table is small, the marks keep a purged alarm
// from being raised again).
const purgeAlarmsSQL = `DELETE FROM alarms WHERE id IN (
	SELECT id FROM alarms WHERE NOT open AND raised_at < $1 LIMIT $2)`

// purge deletes done jobs finished before before, with their attempts,
// closed alarms raised before it, and skip records older than before, in batches of Config.PurgeBatch,
// each its own transaction (one statement), so that the jobs table is not
// locked long and vacuum can reclaim a batch while the next is deleted.
func (s *Store) purge(ctx context.Context, before time.Time) (jobs, skips int64, err error) {
	for {
		var n int64
		err := s.inTx(ctx, func(tx pgx.Tx, d store.CountDeltas) error {
			rows, err := tx.Query(ctx, purgeDoneSQL, ts(before), s.cfg.PurgeBatch)
			n, err = moveTypes(rows, err, d, store.StateDone, "")
			return err
		})
		if err != nil {
			return jobs, skips, fmt.Errorf("purge done jobs: %w", err)
		}
		jobs += n
		if n < int64(s.cfg.PurgeBatch) {
			break
		}
	}
	for {
		tag, err := s.pool.Exec(ctx, purgeSkipsSQL, ts(before), s.cfg.PurgeBatch)
		if err != nil {
			return jobs, skips, fmt.Errorf("purge skips: %w", err)
		}
		skips += tag.RowsAffected()
		if tag.RowsAffected() < int64(s.cfg.PurgeBatch) {
			break
		}
	}
	for {
		tag, err := s.pool.Exec(ctx, purgeAlarmsSQL, ts(before), s.cfg.PurgeBatch)
		if err != nil {
			return jobs, skips, fmt.Errorf("purge alarms: %w", err)
		}
		if tag.RowsAffected() < int64(s.cfg.PurgeBatch) {
			break
		}
	}
	// Rate limits' buckets that are full again: as if they had no row.
	if _, err := s.pool.Exec(ctx, purgeRateLimitsSQL, s.now()); err != nil {
		return jobs, skips, fmt.Errorf("purge rate limits: %w", err)
	}
	return jobs, skips, nil
}

// maintenanceLock is the first key of the session advisory lock under
// which one node at a time maintains a schema; the second is the schema's
// hash.
const maintenanceLock = 0x5343_4845 // "SCHE"

// Maintain reclaims expired leases, then purges what is older than retain,
// on one node at a time: it holds a session advisory lock on a connection
// of its own meanwhile, and returns Skipped when another node holds it.
// The lock is an efficiency only: reclaims and purges by several nodes at
// once would still be correct.
func (s *Store) Maintain(ctx context.Context, retain time.Duration) (store.MaintenanceReport, error) {
	var rep store.MaintenanceReport
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return rep, fmt.Errorf("maintenance: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, maintenanceLock).Scan(&locked); err != nil {
		return rep, fmt.Errorf("maintenance lock: %w", err)
	}
	if !locked {
		rep.Skipped = true
		return rep, nil
	}
	defer func() {
		// A lock that cannot be released goes with its session.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, maintenanceLock); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	if rep.Reclaimed, err = s.reclaimExpired(ctx); err != nil {
		return rep, err
	}
	if rep.Purged, rep.Skips, err = s.purge(ctx, s.now().Add(-retain)); err != nil {
		return rep, err
	}
	s.log.InfoContext(ctx, "maintenance done", "component", "maintenance",
		"reclaimed", rep.Reclaimed, "purged", rep.Purged, "skips_purged", rep.Skips)
	return rep, nil
}

const saveConfigSQL = `INSERT INTO running_config (id, path, data, sha256, loaded_at) VALUES (1, $1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET path = excluded.path, data = excluded.data, sha256 = excluded.sha256, loaded_at = excluded.loaded_at`

// SaveConfig stores data, read from the file at path, as the configuration
// the daemon now runs.
func (s *Store) SaveConfig(ctx context.Context, path string, data []byte) (*store.StoredConfig, error) {
	c := &store.StoredConfig{Path: path, Data: data, SHA256: store.ConfigSHA256(data), LoadedAt: ts(s.now())}
	if data == nil {
		c.Data = []byte{}
	}
	if _, err := s.pool.Exec(ctx, saveConfigSQL, cleanText(c.Path), c.Data, c.SHA256, c.LoadedAt); err != nil {
		return nil, fmt.Errorf("save config %s: %w", path, err)
	}
	return c, nil
}

// LastConfig returns the configuration stored by the last SaveConfig, or
// ErrNotFound.
func (s *Store) LastConfig(ctx context.Context) (*store.StoredConfig, error) {
	c := &store.StoredConfig{}
	err := s.pool.QueryRow(ctx, `SELECT path, data, sha256, loaded_at FROM running_config WHERE id = 1`).Scan(&c.Path, &c.Data, &c.SHA256, &c.LoadedAt)
	if errNoRows(err) {
		return nil, fmt.Errorf("last config: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("last config: %w", err)
	}
	c.LoadedAt = c.LoadedAt.UTC()
	return c, nil
}

// daemonsSQL reads the pools' rows. A schema older than the record of
// configs has no config columns (opened read-only, it is not migrated):
// see daemonsOldSQL.
const (
	daemonsSQL    = `SELECT owner, pid, host, version, started_at, seen_at, config_sha256, config_at FROM pools ORDER BY seen_at DESC LIMIT 100`
	daemonsOldSQL = `SELECT owner, pid, host, version, started_at, seen_at, '', NULL::timestamptz FROM pools ORDER BY seen_at DESC LIMIT 100`
)

// Daemons returns the recorded pools, most recently seen first (at most 100).
func (s *Store) Pools(ctx context.Context) ([]store.PoolRow, error) {
	q := daemonsSQL
	if s.noPoolConfig {
		q = daemonsOldSQL
	}
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	defer rows.Close()
	var out []store.PoolRow
	for rows.Next() {
		var d store.PoolRow
		var loaded *time.Time
		if err := rows.Scan(&d.Owner, &d.PID, &d.Host, &d.Version, &d.StartedAt, &d.LastSeen, &d.Config, &loaded); err != nil {
			return nil, fmt.Errorf("read daemons: %w", err)
		}
		d.StartedAt, d.LastSeen = d.StartedAt.UTC(), d.LastSeen.UTC()
		if d.Config != "" && loaded != nil {
			d.ConfigAt = loaded.UTC()
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	return out, nil
}

// unhandledSQL tells, from job_counts, whether a type with pending jobs has
// no live pool with a handler for it ($1, the types they handle): usually
// not, and then Handlers reads no job unless versionedSQL finds one. A
// schema older than job_counts (read-only) is read the long way.
const unhandledSQL = `SELECT EXISTS (
	SELECT type FROM job_counts WHERE state = 'pending' GROUP BY type HAVING sum(n) > 0
	EXCEPT SELECT unnest($1::text[]))`

// versionedSQL tells whether a pending job of another version than 1
// exists, from the partial index of those: none, the common case, reads
// nothing.
const versionedSQL = `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'pending' AND version <> 1)`

// livePoolsSQL reads what the live pools take; livePoolsOldSQL on a schema
// older than job versions, and waitingOldSQL instead of waitingSQL.
const (
	livePoolsSQL    = `SELECT types, versions FROM pools WHERE seen_at >= $1`
	livePoolsOldSQL = `SELECT types, '{}'::jsonb FROM pools WHERE seen_at >= $1`
	waitingOldSQL   = `SELECT type, 1, count(*), min(run_at) FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND NOT type = ANY($2)
GROUP BY type ORDER BY type`
)

// waitingSQL counts, by type and version, the ready jobs that no live pool
// takes ($2 to $4, what they take together, as in claimSQL).
var waitingSQL = `SELECT type, version, count(*), min(run_at) FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND NOT ` + acceptedJobs(2, true) + `
GROUP BY type, version ORDER BY type, version`

// Handlers reports which ready jobs wait for a handler: the types that no
// running pool has registered, and the versions of a registered type that
// none of them accepts. The schema always records pools: Known is true.
func (s *Store) Unhandled(ctx context.Context) (store.Unhandled, error) {
	h := store.Unhandled{Known: true}
	now := s.now()
	live := ts(now.Add(-store.AliveWithin))
	q := livePoolsSQL
	if s.noVersions {
		q = livePoolsOldSQL
	}
	pools, err := s.livePools(ctx, q, live)
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	h.Pools = len(pools)
	accepted := store.Accepted(pools)
	handled := make([]string, 0, len(accepted))
	all := store.Versions{}
	for t, vs := range accepted {
		handled = append(handled, t)
		if len(vs) != 1 || vs[0] != 1 {
			all[t] = vs
		}
	}
	sort.Strings(handled)
	if !s.noCounts && len(all) == 0 {
		var unhandled, versioned bool
		if err := s.pool.QueryRow(ctx, unhandledSQL, handled).Scan(&unhandled); err != nil {
			return h, fmt.Errorf("handlers: %w", err)
		}
		if !unhandled && !s.noVersions {
			if err := s.pool.QueryRow(ctx, versionedSQL).Scan(&versioned); err != nil {
				return h, fmt.Errorf("handlers: %w", err)
			}
		}
		if !unhandled && !versioned {
			return h, nil
		}
	}
	plain, pairs := all.Split(handled)
	if plain == nil {
		plain = []string{}
	}
	pt, pv := make([]string, len(pairs)), make([]int32, len(pairs))
	for i, p := range pairs {
		pt[i], pv[i] = p.Type, int32(p.Version)
	}
	var rows pgx.Rows
	if s.noVersions {
		rows, err = s.pool.Query(ctx, waitingOldSQL, ts(now), handled)
	} else {
		rows, err = s.pool.Query(ctx, waitingSQL, ts(now), plain, pt, pv)
	}
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	defer rows.Close()
	var byVersion []store.Waiting
	for rows.Next() {
		var w store.Waiting
		var oldest time.Time
		if err := rows.Scan(&w.Type, &w.Version, &w.Ready, &oldest); err != nil {
			return h, fmt.Errorf("handlers: %w", err)
		}
		w.Oldest = now.Sub(oldest)
		byVersion = append(byVersion, w)
	}
	if err := rows.Err(); err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	h.Waiting = store.MergeWaiting(byVersion, accepted)
	return h, nil
}

// livePools reads the types and versions of the pools seen since live.
func (s *Store) livePools(ctx context.Context, q string, live time.Time) ([]store.PoolTypes, error) {
	rows, err := s.pool.Query(ctx, q, live)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.PoolTypes
	for rows.Next() {
		var p store.PoolTypes
		if err := rows.Scan(&p.Types, &p.Versions); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
