package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// attemptsText renders a job's attempts as "1:cancelled ...".
func attemptsText(t *testing.T, q *Store, id int64) string {
	t.Helper()
	as, err := q.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range as {
		got = append(got, fmt.Sprintf("%d:%s", a.Number, a.Outcome))
	}
	return strings.Join(got, " ")
}

// TestMigrationKeepsAttempts: a database of schema 1, with a job and its
// attempts, opens at the current schema with both kept, and its attempts
// table takes the cancelled outcome.
func TestMigrationKeepsAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	schema1, err := migrationFS.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{string(schema1), "PRAGMA user_version = 1",
		`INSERT INTO jobs (id, key, type, state, max_attempts, run_at, created_at) VALUES (1, 'k', 't', 'pending', 3, 0, 0)`,
		`INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error) VALUES (1, 1, 'w', 0, 1, 'retry', 'boom')`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if got := attemptsText(t, q, 1); got != "1:retry" {
		t.Errorf("attempts after migration = %s, want 1:retry", got)
	}
	if _, err := q.w.ExecContext(ctx, `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome) VALUES (1, 2, 'w', 0, 1, 'cancelled')`); err != nil {
		t.Errorf("a cancelled attempt after migration: %v", err)
	}
	if st, err := q.RequestCancel(ctx, 1, "alice"); err != nil || st != StatePending {
		t.Errorf("RequestCancel after migration = %s, %v", st, err)
	}
	if j := mustJob(t, q, "k"); j.State != StateCancelled || j.LastError != "cancelled by alice" {
		t.Errorf("job: %s %q, want cancelled by alice", j.State, j.LastError)
	}
}
