package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"scheduler/queue/store"
)

// TestMigrationFillsCounts: a file written before job_counts existed gets
// its counts from its rows when it is opened, and Stats reads them; a
// read-only open of such a file, which migrates nothing, counts the rows.
func TestMigrationFillsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	// The schema before job_counts, with two pending jobs of a and a
	// cancelled one of b.
	if err := CreateAtVersion(ctx, path, 7); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at)
		VALUES ('1', 'a', 'pending', 1, 0, 0), ('2', 'a', 'pending', 1, 0, 0), ('3', 'b', 'cancelled', 1, 0, 0)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	ro, err := Open(ctx, path, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ro.Stats(ctx)
	ro.Close()
	if err != nil || st.Counts[store.StatePending]["a"] != 2 || st.Counts[store.StateCancelled]["b"] != 1 {
		t.Fatalf("read-only Stats of the old schema = %v, %v; want 2 pending a and 1 cancelled b", st.Counts, err)
	}

	q, err := Open(ctx, path, Config{})
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
