package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestRunOfInterleavedBatch: a manual run enqueued in one transaction of
// several statements (EnqueueTx, twice), while another node enqueues in
// between, has ids with another job's among them; Run counts the run's
// jobs all the same.
func TestRunOfInterleavedBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	a, b := open(t, dsn, c), open(t, dsn, c)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	job := func(item string) store.NewJob {
		return store.NewJob{Type: "t", Key: "s|" + item + "|manual|k", Schedule: "s", Item: item}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := postgres.EnqueueTx(ctx, tx, job("x"))
	if err != nil {
		t.Fatal(err)
	}
	// Of another type: a job of type t could pick the job_counts slot the
	// open transaction holds, and wait for its commit, which waits for it.
	other, err := b.Enqueue(ctx, store.NewJob{Type: "u", Key: "s|x|manual|other", Schedule: "s", Item: "x"})
	if err != nil {
		t.Fatal(err)
	}
	rest, err := postgres.EnqueueTx(ctx, tx, job("y"), job("z"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if !(first[0].ID < other.ID && other.ID < rest[0].ID && rest[0].ID < rest[1].ID) {
		t.Fatalf("ids %d, %d, %d and the other's %d: want the other's among the run's", first[0].ID, rest[0].ID, rest[1].ID, other.ID)
	}
	o, err := a.ManualRun(ctx, "s", rest[1].ID, 3, "|manual|k")
	if err != nil || o.Jobs != 3 || o.States[store.StatePending] != 3 {
		t.Fatalf("Run = %+v, %v; want the run's 3 jobs", o, err)
	}
}

func TestName(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable": "postgres://u@h:5432/db?sslmode=disable",
		"host=h user=u password=secret dbname=db":       "host=h user=u dbname=db",
		"host=h password='se cret' dbname=db":           "host=h dbname=db",
	} {
		if got := postgres.Redact(dsn); got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestAlarmQueryPlans: each read of the alarms' evaluation can walk its
// index (the planner may prefer a scan of a table this small, so scans are
// switched off for the check); none reads the whole jobs table.
func TestAlarmQueryPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	open(t, dsn, clock.NewFake(t0)) // migrates the schema
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for name, q := range postgres.AlarmQueries {
		rows, err := conn.Query(ctx, "EXPLAIN "+q.SQL, q.Args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, q.Index) || strings.Contains(plan, "Seq Scan on jobs") {
			t.Errorf("%s: plan does not walk %s:\n%s", name, q.Index, plan)
		}
	}
}

// TestEndedQueryPlans: purge and the charts walk the ranges of
// jobs_finished, never the jobs table.
func TestEndedQueryPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	open(t, dsn, clock.NewFake(t0)) // migrates the schema
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for name, q := range postgres.EndedQueries {
		rows, err := conn.Query(ctx, "EXPLAIN "+q.SQL, q.Args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "using jobs_finished on jobs") || strings.Contains(plan, "Seq Scan on jobs") {
			t.Errorf("%s: plan does not walk jobs_finished:\n%s", name, plan)
		}
	}
}

// TestClaimQueryPlans: a claim walks jobs_ready, in its order, whether the
// pool takes version 1 alone of each type or other versions too, and so
// does the next wake; none sorts or reads the whole jobs table.
func TestClaimQueryPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	open(t, dsn, clock.NewFake(t0)) // migrates the schema
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, postgres.ClaimPlanSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for name, q := range postgres.ClaimQueries {
		rows, err := tx.Query(ctx, "EXPLAIN "+q.SQL, q.Args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "jobs_ready") || strings.Contains(plan, "Seq Scan on jobs") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: plan does not walk jobs_ready:\n%s", name, plan)
		}
	}
}
