package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"scheduler/queue/store"
)

// TestMigrationFillsCounts: a file written before job_counts existed gets
// its counts from its rows when it is opened, and Stats reads them; a
// read-only open of such a file, which migrates nothing, counts the rows.
func TestMigrationFillsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []store.NewJob{{Type: "a", Key: "1"}, {Type: "a", Key: "2"}, {Type: "b", Key: "3"}} {
		if _, err := q.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Cancel(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before job_counts (and the alarms after it).
	if _, err := q.w.ExecContext(ctx, "DROP TRIGGER jobs_counted; DROP TABLE job_counts; DROP TABLE alarms; DROP TABLE alarm_marks; DROP INDEX jobs_dead_finished; PRAGMA user_version = 7"); err != nil {
		t.Fatal(err)
	}
	q.Close()

	ro, err := Open(ctx, path, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ro.Stats(ctx)
	ro.Close()
	if err != nil || st.Counts[store.StatePending]["a"] != 2 || st.Counts[store.StateCancelled]["b"] != 1 {
		t.Fatalf("read-only Stats of the old schema = %v, %v; want 2 pending a and 1 cancelled b", st.Counts, err)
	}

	q, err = Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var n int
	if err := q.r.QueryRowContext(ctx, "SELECT coalesce(sum(n), 0) FROM job_counts").Scan(&n); err != nil || n != 3 {
		t.Fatalf("job_counts after the migration holds %d jobs, %v; want 3", n, err)
	}
	if _, err := q.Enqueue(ctx, store.NewJob{Type: "a", Key: "4"}); err != nil {
		t.Fatal(err)
	}
	st, err = q.Stats(ctx)
	if err != nil || st.Counts[store.StatePending]["a"] != 3 || st.Counts[store.StateCancelled]["b"] != 1 || st.Total[store.StatePending] != 3 {
		t.Fatalf("Stats after the migration = %v, %v; want 3 pending a and 1 cancelled b", st.Counts, err)
	}
}
