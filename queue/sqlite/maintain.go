package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

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

// purgeDone deletes up to n done jobs finished before before, and keeps
// their keys, but generated ones, in used_keys, in tx. The jobs past the
// count mark are counted first, so that none it deletes is past the mark.
func purgeDone(ctx context.Context, tx txn, before time.Time, n int) (int64, error) {
	if err := tx.countPastMark(ctx); err != nil {
		return 0, err
	}
	if _, err := tx.exec(ctx, purgeKeysSQL, ms(before), n); err != nil {
		return 0, err
	}
	return store.MoveTypes(store.Read(wrap(tx.query(ctx, purgeDoneSQL, ms(before), n))), tx.counts, store.StateDone, "")
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
