package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Maintain reclaims expired leases, then purges done jobs and skip records
// older than retain. It logs the counts. SQLite has one host: Maintain is
// never Skipped.
func (s *Store) Maintain(ctx context.Context, retain time.Duration) (store.MaintenanceReport, error) {
	var rep store.MaintenanceReport
	n, err := s.reclaimExpired(ctx)
	if err != nil {
		return rep, err
	}
	rep.Reclaimed = n
	before := s.clock.Now().Add(-retain)
	if rep.Purged, rep.Skips, err = s.purge(ctx, before); err != nil {
		return rep, err
	}
	s.log.InfoContext(ctx, "maintenance done", "component", "maintenance",
		"reclaimed", rep.Reclaimed, "purged", rep.Purged, "skips_purged", rep.Skips)
	return rep, nil
}

// reclaimExpired returns running jobs whose lease expired to pending, or to dead
// when they have no attempt left, and records the lost attempts.
func (s *Store) reclaimExpired(ctx context.Context) (int, error) {
	var rs []store.Reclaimed
	err := s.inTx(ctx, false, func(tx txn) error {
		var err error
		rs, err = s.reclaim(ctx, tx, s.clock.Now())
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
		s.notify()
	}
	return len(rs), nil
}

// purgeBatch selects one batch of old done jobs. The order is total
// (jobs_done holds finished_at, id), so that purgeKeysSQL, run just before
// purgeDoneSQL in the same transaction, reads the same batch. The job with
// the highest id is kept: SQLite gives a new row the highest id plus one
// (the table has no AUTOINCREMENT), so deleting it would draw its id
// again, for a job that a late result or an operator's reference to the
// purged one would then reach. The transaction counts the jobs past the
// count mark before it deletes any (countPastMark).
const purgeBatch = `SELECT id FROM jobs WHERE state = 'done' AND finished_at < ?1 AND id < (SELECT max(id) FROM jobs)
	ORDER BY finished_at, id LIMIT ?2`

// purgeDoneSQL deletes one batch of old done jobs.
const purgeDoneSQL = `DELETE FROM jobs WHERE id IN (` + purgeBatch + `) RETURNING type`

// purgeKeysSQL keeps the keys of the batch purgeDoneSQL deletes, except
// generated ones, in used_keys.
var purgeKeysSQL = `INSERT INTO used_keys (key, finished_at)
SELECT key, finished_at FROM jobs WHERE id IN (` + purgeBatch + `)
	AND key NOT GLOB '` + generatedKeyGlob + `'
ON CONFLICT (key) DO NOTHING`

const purgeSkipsSQL = `DELETE FROM skips WHERE (schedule, item, scheduled_at) IN (
	SELECT schedule, item, scheduled_at FROM skips WHERE recorded_at < ? LIMIT ?)`

// purgeAlarmsSQL deletes closed alarms raised before ?1, at most ?2. The
// alarms table holds alarms only, so it is scanned rather than indexed by
// age. An open alarm stays until its recovery closes it; a purged one is
// not raised again, because the marks (and, for dead jobs, a lookback of
// minutes) keep the beat from judging its instant twice.
const purgeAlarmsSQL = `DELETE FROM alarms WHERE id IN (
	SELECT id FROM alarms WHERE open = 0 AND raised_at < ? LIMIT ?)`

// purge deletes done jobs finished before before, with their attempts,
// closed alarms raised before it, skip records older than before, and the
// buckets of rate limits that are full again, in batches of Config.PurgeBatch, each its own
// transaction so that other writers interleave. Dead, pending and running
// jobs are kept, and so is the newest job (see purgeBatch). The key of a purged job enqueued with a key of its own
// stays used (used_keys, moved in the transaction that deletes the job):
// an enqueue under it inserts nothing, as before the purge. It then
// checkpoints and truncates the WAL when no reader holds it.
func (s *Store) purge(ctx context.Context, before time.Time) (jobs, skips int64, err error) {
	// batch runs queries in one transaction and returns the rows the last
	// one changed.
	batch := func(queries ...string) (int64, error) {
		var n int64
		start := s.clock.Monotonic()
		defer func() {
			if n == int64(s.cfg.PurgeBatch) && s.cfg.PurgePause > 0 {
				// More to delete: rest first (see Config.PurgePause).
				select {
				case <-ctx.Done():
				case <-s.clock.After(max(s.cfg.PurgePause, s.clock.Monotonic()-start)):
				}
			}
		}()
		err := s.inTx(ctx, false, func(tx txn) error {
			for _, query := range queries {
				if query == purgeDoneSQL {
					if err := tx.countPastMark(ctx); err != nil {
						return err
					}
					rows, err := tx.query(ctx, query, ms(before), s.cfg.PurgeBatch)
					if n, err = tx.moveTypes(rows, err, store.StateDone, ""); err != nil {
						return err
					}
					continue
				}
				res, err := tx.exec(ctx, query, ms(before), s.cfg.PurgeBatch)
				if err != nil {
					return err
				}
				if n, err = res.RowsAffected(); err != nil {
					return err
				}
			}
			return nil
		})
		return n, err
	}
	for {
		n, err := batch(purgeKeysSQL, purgeDoneSQL)
		if err != nil {
			return jobs, skips, fmt.Errorf("purge done jobs: %w", err)
		}
		jobs += n
		if n < int64(s.cfg.PurgeBatch) {
			break
		}
	}
	for {
		n, err := batch(purgeSkipsSQL)
		if err != nil {
			return jobs, skips, fmt.Errorf("purge skips: %w", err)
		}
		skips += n
		if n < int64(s.cfg.PurgeBatch) {
			break
		}
	}
	for {
		n, err := batch(purgeAlarmsSQL)
		if err != nil {
			return jobs, skips, fmt.Errorf("purge alarms: %w", err)
		}
		if n < int64(s.cfg.PurgeBatch) {
			break
		}
	}
	// Rate limits' buckets that are full again: as if they had no row.
	if err := s.inTx(ctx, false, func(tx txn) error {
		_, err := tx.exec(ctx, purgeRateLimitsSQL, ms(s.clock.Now()))
		return err
	}); err != nil {
		return jobs, skips, fmt.Errorf("purge rate limits: %w", err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		return jobs, skips, err
	}
	return jobs, skips, nil
}

// Checkpoint copies the WAL into the database and truncates it. A reader
// holding an old snapshot keeps part of the WAL alive; the next checkpoint
// after it leaves shrinks the file.
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.w == nil {
		return errReadOnly
	}
	var busy, logFrames, done int
	if err := s.w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// CheckpointPassive copies committed WAL frames into the database file
// without waiting for readers or writers, on a connection of its own, so the
// writer's commits do not pay for it. A pool calls it in the background
// while it commits (see queue.Pool), so that its own commits rarely reach
// the autocheckpoint threshold.
func (s *Store) CheckpointPassive(ctx context.Context) error {
	if s.ckpt == nil {
		return errReadOnly
	}
	var busy, logFrames, done int
	if err := s.ckpt.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &done); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Backup writes a consistent copy of the database to path with VACUUM INTO,
// safe while the daemon runs. path must not exist.
func (s *Store) Backup(ctx context.Context, path string) error {
	// The read pool is query_only, which refuses VACUUM INTO; this
	// connection only reads the source, in one snapshot.
	db, err := sql.Open("sqlite", dsn(s.abs, s.cfg.BusyTimeout, false))
	if err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	defer db.Close()
	// VACUUM INTO would create the copy with the umask's mode; an empty
	// file made 0600 first is filled in place instead.
	created, err := createPrivate(path)
	if err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		if created {
			os.Remove(path)
		}
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	return nil
}
