package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestMigrationToDiscarded: a file from before discarded jobs is read as it
// is when opened read-only, and migrated in place: its rows and attempts
// stay, the file stays sound, and every connection, of this process or
// another, may then write the new state into jobs and job_counts.
func TestMigrationToDiscarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	if err := CreateAtVersion(ctx, path, 17); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (id, key, type, state, attempt, max_attempts, run_at, created_at, finished_at, last_error) VALUES
		(1, 'dead', 't', 'dead', 1, 1, 0, 0, 5, 'boom'), (2, 'done', 't', 'done', 1, 1, 0, 0, 5, '');
		INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error) VALUES (1, 1, 'w', 0, 5, 'dead', 'boom');
		INSERT INTO job_counts (type, state, n) VALUES ('t', 'dead', 1), ('t', 'done', 1);
		UPDATE job_counts_mark SET last_id = 2`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, path, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := ro.JobByKey(ctx, "dead"); err != nil || j.State != store.StateDead || !j.DiscardedAt.IsZero() {
		t.Errorf("read-only JobByKey of the old schema = %+v, %v; want the dead job", j, err)
	}
	ro.Close()

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
	// a migrated the file on its connections; b opened it afterwards.
	if d, err := a.Discard(ctx, store.Discard{IDs: []int64{1}, By: "op"}); err != nil || len(d.IDs) != 1 {
		t.Fatalf("Discard on the migrating store = %+v, %v", d, err)
	}
	if err := b.Retry(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Retry(ctx, 1); err == nil {
		t.Fatal("a second Retry succeeded")
	}
	if d, err := b.Discard(ctx, store.Discard{IDs: []int64{1}, By: "op"}); err != nil || len(d.Refused) != 1 {
		t.Fatalf("Discard of the pending job = %+v, %v", d, err)
	}
	if as, err := a.Attempts(ctx, 1); err != nil || len(as) != 1 || as[0].Error != "boom" {
		t.Errorf("attempts after the migration = %+v, %v; want the dead one", as, err)
	}
	for _, check := range []string{"PRAGMA integrity_check", "PRAGMA foreign_key_check"} {
		var got sql.NullString
		err := a.r.QueryRowContext(ctx, check).Scan(&got)
		if check == "PRAGMA foreign_key_check" && err == sql.ErrNoRows {
			continue
		}
		if err != nil || got.String != "ok" {
			t.Errorf("%s = %q, %v", check, got.String, err)
		}
	}
	st, err := a.Stats(ctx)
	if err != nil || st.Total[store.StatePending] != 1 || st.Total[store.StateDone] != 1 || st.Dead != 0 {
		t.Errorf("Stats after discard and retry = %v, %v", st.Total, err)
	}
}
