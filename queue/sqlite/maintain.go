package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// purgeBatch selects old done jobs in a total order, so purgeKeysSQL and
// purgeDoneSQL read the same batch: it walks the done jobs of jobs_finished
// by finished_at, sorting only the ids of one finished_at. It keeps the
// highest id: SQLite, without AUTOINCREMENT, would give it to the next job,
// which a late result or a reference to the purged one would then reach.
const purgeBatch = `SELECT id FROM jobs WHERE state = 'done' AND finished_at < ?1 AND id < (SELECT max(id) FROM jobs)
	ORDER BY finished_at, id LIMIT ?2`

const purgeDoneSQL = `DELETE FROM jobs WHERE id IN (` + purgeBatch + `) RETURNING type`

// purgeKeysSQL keeps the batch's non-generated keys in used_keys.
var purgeKeysSQL = `INSERT INTO used_keys (key, finished_at)
SELECT key, finished_at FROM jobs WHERE id IN (` + purgeBatch + `)
	AND key NOT GLOB '` + generatedKeyGlob + `'
ON CONFLICT (key) DO NOTHING`

// purgeDone deletes up to n done jobs finished before before, keeping their
// keys used, after counting the jobs past the count mark.
func purgeDone(ctx context.Context, tx txn, before time.Time, n int) (int64, error) {
	if err := tx.countPastMark(ctx); err != nil {
		return 0, err
	}
	if _, err := tx.exec(ctx, purgeKeysSQL, ms(before), n); err != nil {
		return 0, err
	}
	return store.MoveTypes(store.Read(wrap(tx.query(ctx, purgeDoneSQL, ms(before), n))), tx.counts, store.StateDone, "")
}

// Checkpoint copies the WAL into the database and truncates it. A reader on
// an old snapshot keeps part of it until it leaves.
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

// CheckpointPassive copies committed WAL frames into the database without
// waiting, on a connection of its own, so the writer's commits do not pay for
// it. A committing pool calls it in the background.
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

// checkpointBehind starts CheckpointPassive in the background unless one it
// started still runs or s is closing; Close waits for it. A failure is
// logged: the next checkpoint, or the writer's autocheckpoint, does the
// work.
func (s *Store) checkpointBehind() {
	if s.ckpt == nil || !s.checkpointing.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.checkpointing.Store(false)
		return
	}
	s.behind.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.behind.Done()
		defer s.checkpointing.Store(false)
		if err := s.CheckpointPassive(context.Background()); err != nil {
			s.log.Warn("background checkpoint failed", "err", err)
		}
	}()
}

// Backup writes a consistent copy of the database to path, which must not
// exist, with VACUUM INTO, safe while the daemon runs.
func (s *Store) Backup(ctx context.Context, path string) error {
	// The read pool is query_only, which refuses VACUUM INTO.
	db, err := sql.Open("sqlite", dsn(s.abs, s.cfg.BusyTimeout, false))
	if err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	defer db.Close()
	// VACUUM INTO would use the umask; it fills a 0600 file instead.
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
