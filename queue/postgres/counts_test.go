package postgres_test

import (
	"context"
	"testing"

	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestMigrationFillsCounts: a schema migrated before job_counts existed
// gets its counts from its rows at the next open, and Stats reads them; a
// read-only open of such a schema, which migrates nothing, counts the rows.
func TestMigrationFillsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	// The schema before job_counts, with two pending jobs of a and a
	// cancelled one of b.
	if err := postgres.CreateAtVersion(ctx, dsn, 2); err != nil {
		t.Fatal(err)
	}
	conn, err := postgresConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at)
		VALUES ('1', 'a', 'pending', 1, now(), now()), ('2', 'a', 'pending', 1, now(), now()), ('3', 'b', 'cancelled', 1, now(), now())`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := postgres.Open(ctx, dsn, postgres.Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ro.Stats(ctx)
	ro.Close()
	if err != nil || st.Counts[store.StatePending]["a"] != 2 || st.Counts[store.StateCancelled]["b"] != 1 {
		t.Fatalf("read-only Stats of the old schema = %v, %v; want 2 pending a and 1 cancelled b", st.Counts, err)
	}

	s, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Enqueue(ctx, store.NewJob{Type: "a", Key: "4"}); err != nil {
		t.Fatal(err)
	}
	st, err = s.Stats(ctx)
	if err != nil || st.Counts[store.StatePending]["a"] != 3 || st.Counts[store.StateCancelled]["b"] != 1 || st.Total[store.StatePending] != 3 {
		t.Fatalf("Stats after the migration = %v, %v; want 3 pending a and 1 cancelled b", st.Counts, err)
	}
	got, err := s.CountJobs(ctx)
	if err != nil || got[store.StatePending]["a"] != 3 {
		t.Fatalf("CountJobs = %v, %v", got, err)
	}
}
