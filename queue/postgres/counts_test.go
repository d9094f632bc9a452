package postgres_test

import (
	"context"
	"testing"

	"scheduler/queue/postgres"
	"scheduler/queue/postgres/pgtest"
	"scheduler/queue/store"
)

// TestMigrationFillsCounts: a schema migrated before job_counts existed
// gets its counts from its rows at the next open, and Stats reads them; a
// read-only open of such a schema, which migrates nothing, counts the rows.
func TestMigrationFillsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []store.NewJob{{Type: "a", Key: "1"}, {Type: "a", Key: "2"}, {Type: "b", Key: "3"}} {
		if _, err := s.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	b, err := s.JobByKey(ctx, "3")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Back to the schema before job_counts (and the alarms after it).
	conn, err := postgresConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DROP TABLE job_counts, alarms, alarm_marks; DROP INDEX jobs_dead_finished;
		DELETE FROM schema_migrations WHERE name IN ('0003_job_counts.sql', '0004_alarms.sql')`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	ro, err := postgres.Open(ctx, dsn, postgres.Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ro.Stats(ctx)
	ro.Close()
	if err != nil || st.Counts[store.StatePending]["a"] != 2 || st.Counts[store.StateCancelled]["b"] != 1 {
		t.Fatalf("read-only Stats of the old schema = %v, %v; want 2 pending a and 1 cancelled b", st.Counts, err)
	}

	s, err = postgres.Open(ctx, dsn, postgres.Config{})
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
