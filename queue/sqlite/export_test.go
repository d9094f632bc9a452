package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// CountJobs counts every job by state and type, row by row: the truth that
// job_counts must agree with (see storetest.JobCounter).
func (s *Store) CountJobs(ctx context.Context) (map[store.State]map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, countEveryJobSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[store.State]map[string]int{}
	for rows.Next() {
		var st store.State
		var typ string
		var n int
		if err := rows.Scan(&st, &typ, &n); err != nil {
			return nil, err
		}
		if out[st] == nil {
			out[st] = map[string]int{}
		}
		out[st][typ] = n
	}
	return out, rows.Err()
}

// CreateAtVersion creates the file at path with the schema of its first v
// migrations and nothing else: an older file, for tests of what the later
// migrations do to it.
func CreateAtVersion(ctx context.Context, path string, v int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, m := range ms {
		if m.version > v {
			break
		}
		if _, err := db.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
	}
	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
	return err
}

// errRollBack rolls back an Outbox that is not to commit.
var errRollBack = errors.New("roll back")

// Outbox writes note to a table of the test's own and enqueues jobs with
// EnqueueTx, in one Tx that commits if commit is set (see
// storetest.Outboxer).
func (s *Store) Outbox(ctx context.Context, note string, jobs []store.NewJob, commit bool) ([]store.Enqueued, error) {
	var res []store.Enqueued
	err := s.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS notes (note TEXT)`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO notes VALUES (?)`, note); err != nil {
			return err
		}
		var err error
		if res, err = EnqueueTx(ctx, tx, jobs...); err != nil {
			return err
		}
		if !commit {
			return errRollBack
		}
		return nil
	})
	if errors.Is(err, errRollBack) {
		err = nil
	}
	return res, err
}

// Notes reads the notes Outbox committed.
func (s *Store) Notes(ctx context.Context) ([]string, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'notes'`).Scan(&n); err != nil || n == 0 {
		return nil, err
	}
	return store.Collect(store.Read(reader{s}.Query(ctx, `SELECT note FROM notes ORDER BY rowid`)), func(r store.Row) (string, error) {
		var note string
		err := r.Scan(&note)
		return note, err
	})
}

// LiveRows counts the rows of live output, hidden ones too (see
// storetest.LiveCounter).
func (s *Store) LiveRows(ctx context.Context) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM live_output`).Scan(&n)
	return n, err
}
