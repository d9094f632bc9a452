package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestMigrationToStateChain: migration 0027 rewrites the check of a job's
// state from an IN list, which SQLite builds into a lookup table for every
// row it writes, to a chain of comparisons. On a file from before it, every
// connection, of the migrating store or of one opened afterwards, still
// refuses a state that is none of a job's, and takes every one that is; the
// rows stay and the file stays sound.
func TestMigrationToStateChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	if err := CreateAtVersion(ctx, path, 26); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (id, key, type, state, attempt, max_attempts, run_at, created_at) VALUES
		(1, 'one', 't', 'pending', 0, 3, 0, 0);
		INSERT INTO job_counts (type, state, n) VALUES ('t', 'pending', 1);
		UPDATE job_counts_mark SET last_id = 1`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var def string
	if err := a.r.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'jobs'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(def, "state IN (") || !strings.Contains(def, "state = 'discarded')") {
		t.Errorf("jobs after the migration:\n%s\nwant the state checked by comparisons", def)
	}
	for _, s := range []*Store{a, b} {
		if _, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'lost' WHERE id = 1`); err == nil ||
			!strings.Contains(err.Error(), "CHECK constraint failed") {
			t.Errorf("an unknown state was written: %v", err)
		}
		for _, st := range []store.State{store.StateDone, store.StateDead, store.StateCancelled, store.StateDiscarded, store.StatePending} {
			if _, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = ? WHERE id = 1`, string(st)); err != nil {
				t.Errorf("state %s refused: %v", st, err)
			}
		}
		if _, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'running', owner = 'p', lease_until = 1 WHERE id = 1`); err != nil {
			t.Errorf("state running refused: %v", err)
		}
		if _, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
	}
	if j, err := b.JobByKey(ctx, "one"); err != nil || j.State != store.StatePending || j.MaxAttempts != 3 {
		t.Errorf("JobByKey after the migration = %+v, %v", j, err)
	}
	var check string
	if err := a.r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
}
