package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestReadOnlySchemaBeforeVersions: a schema written before jobs had
// versions, opened read-only (which migrates nothing), still shows its
// jobs, all of version 1, and what waits for a handler; opened to write,
// it gains the column, and its jobs keep version 1.
func TestReadOnlySchemaBeforeVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	if err := postgres.CreateAtVersion(ctx, dsn, 4); err != nil {
		t.Fatal(err)
	}
	conn, err := postgresConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at, schedule, scheduled_at)
		VALUES ('k', 'a', 'pending', 1, now() - interval '1 minute', now(), 's', now());
		INSERT INTO job_counts (type, state, slot, n) VALUES ('a', 'pending', 0, 1)`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := postgres.Open(ctx, dsn, postgres.Config{ReadOnly: true})
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

	s, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if j, err := s.JobByKey(ctx, "k"); err != nil || j.Version != 1 {
		t.Errorf("JobByKey after the migration = %+v, %v; want version 1", j, err)
	}
}

// TestReadOnlySchemaBeforePoolConfig: a schema written before the pools'
// rows recorded the config, opened read-only, lists its daemons without
// one; opened to write, it gains the columns.
func TestReadOnlySchemaBeforePoolConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	if err := postgres.CreateAtVersion(ctx, dsn, 7); err != nil {
		t.Fatal(err)
	}
	conn, err := postgresConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO pools (owner, types, pid, host, version, started_at, seen_at) VALUES ('A', '{t}', 7, 'h', 'v1', now(), now())`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := postgres.Open(ctx, dsn, postgres.Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := ro.Pools(ctx); err != nil || len(ds) != 1 || ds[0].Owner != "A" || ds[0].Config != "" || !ds[0].ConfigAt.IsZero() {
		t.Errorf("read-only Daemons of the old schema = %+v, %v; want A without a config", ds, err)
	}
	ro.Close()

	s, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ds, err := s.Pools(ctx); err != nil || len(ds) != 1 || ds[0].Config != "" {
		t.Errorf("Daemons after the migration = %+v, %v; want A without a config", ds, err)
	}
}

// TestSchemaBeforeAlarmKeys: a schema written before jobs named the alarm
// they notify, opened read-only, shows its jobs without one; opened to
// write, its notification jobs, told by their keys, get their alarms'
// keys, and no other job does.
func TestSchemaBeforeAlarmKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	if err := postgres.CreateAtVersion(ctx, dsn, 8); err != nil {
		t.Fatal(err)
	}
	conn, err := postgresConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	alarm := store.AlarmKey("s", "x|y", time.Unix(1700000000, 0), 0, store.AlarmMissed)
	_, err = conn.Exec(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at) VALUES
		($1, 'page', 'pending', 1, now(), now()), ('alarmist|1', 't', 'pending', 1, now(), now()), ('s||1', 't', 'pending', 1, now(), now())`,
		store.NotifyKey(alarm, "page"))
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := postgres.Open(ctx, dsn, postgres.Config{ReadOnly: true})
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

	q, err := postgres.Open(ctx, dsn, postgres.Config{})
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
