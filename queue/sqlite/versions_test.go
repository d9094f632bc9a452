package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestReadOnlyFileBeforeVersions: a file written before jobs had versions,
// opened read-only (which migrates nothing), still shows its jobs, all of
// version 1, and what waits for a handler; opened to write, it gains the
// column, and its jobs keep version 1.
func TestReadOnlyFileBeforeVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	if err := CreateAtVersion(ctx, path, 9); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at, schedule, scheduled_at)
		VALUES ('k', 'a', 'pending', 1, 0, 0, 's', 0)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	ro, err := Open(ctx, path, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	j, err := ro.JobByKey(ctx, "k")
	if err != nil || j.Version != 1 {
		t.Errorf("read-only JobByKey of the old schema = %+v, %v; want the job, of version 1", j, err)
	}
	if js, err := ro.List(ctx, store.Filter{Limit: 5}); err != nil || len(js) != 1 || js[0].Version != 1 {
		t.Errorf("read-only List of the old schema = %v, %v; want the job, of version 1", js, err)
	}
	if last, err := ro.LastRuns(ctx); err != nil || last["s"] == nil {
		t.Errorf("read-only LastRuns of the old schema = %v, %v; want the job of s", last, err)
	}
	if h, err := ro.Unhandled(ctx); err != nil || len(h.Waiting) != 1 || h.Waiting[0].Type != "a" || h.Waiting[0].Version != 0 {
		t.Errorf("read-only Handlers of the old schema = %+v, %v; want a waiting for a handler", h, err)
	}
	ro.Close()

	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if j, err := q.JobByKey(ctx, "k"); err != nil || j.Version != 1 {
		t.Errorf("JobByKey after the migration = %+v, %v; want version 1", j, err)
	}
}

// TestReadOnlyFileBeforePoolConfig: a file written before the pools' rows
// recorded the config, opened read-only, lists its daemons without one;
// opened to write, it gains the columns.
func TestReadOnlyFileBeforePoolConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	if err := CreateAtVersion(ctx, path, 14); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO pools (owner, types, pid, host, version, started_at, seen_at) VALUES ('A', '["t"]', 7, 'h', 'v1', 0, 0)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	ro, err := Open(ctx, path, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := ro.Pools(ctx); err != nil || len(ds) != 1 || ds[0].Owner != "A" || ds[0].Config != "" || !ds[0].ConfigAt.IsZero() {
		t.Errorf("read-only Daemons of the old schema = %+v, %v; want A without a config", ds, err)
	}
	ro.Close()

	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if ds, err := q.Pools(ctx); err != nil || len(ds) != 1 || ds[0].Config != "" {
		t.Errorf("Daemons after the migration = %+v, %v; want A without a config", ds, err)
	}
}

// TestFileBeforeAlarmKeys: a file written before jobs named the alarm they
// notify, opened read-only, shows its jobs without one; opened to write,
// its notification jobs, told by their keys, get their alarms' keys, and
// no other job does.
func TestFileBeforeAlarmKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	if err := CreateAtVersion(ctx, path, 15); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	alarm := store.AlarmKey("s", "x|y", t0, 0, store.AlarmMissed)
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at) VALUES
		(?, 'page', 'pending', 1, 0, 0), ('alarmist|1', 't', 'pending', 1, 0, 0), ('s||1', 't', 'pending', 1, 0, 0)`,
		store.NotifyKey(alarm, "page"))
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, path, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := ro.JobByKey(ctx, store.NotifyKey(alarm, "page")); err != nil || j.AlarmKey != "" {
		t.Errorf("read-only JobByKey of the old schema = %+v, %v; want the job, without an alarm key", j, err)
	}
	if _, err := ro.OpenAlarms(ctx, 10); err != nil {
		t.Errorf("read-only OpenAlarms of the old schema: %v", err)
	}
	ro.Close()

	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for key, want := range map[string]string{store.NotifyKey(alarm, "page"): alarm, "alarmist|1": "", "s||1": ""} {
		if j, err := q.JobByKey(ctx, key); err != nil || j.AlarmKey != want {
			t.Errorf("JobByKey(%s) after the migration = %+v, %v; want alarm key %q", key, j, err, want)
		}
	}
}
