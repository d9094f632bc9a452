package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"

	"github.com/scheduler-run/scheduler/queue/store"
)

// finishJob claims the job with key and records outcome for it, as a pool
// would, at the queue clock's now.
func finishJob(t *testing.T, q *Store, key string, outcome Outcome, errText string) {
	t.Helper()
	ctx := context.Background()
	err := q.inTx(ctx, false, func(tx txn) error {
		now := q.clock.Now()
		c := claimer{tx: tx, s: q, owner: "test", now: now, until: now.Add(time.Minute)}
		js, _, _, err := store.ClaimJobs(ctx, c, &store.Claim{Lease: time.Minute, N: 1 << 20, Types: jobTypes(t, q)}, now)
		if err != nil {
			return err
		}
		var rs []result
		for _, j := range js {
			if j.Key == key {
				rs = append(rs, result{Job: j, Worker: "test/w0", Outcome: outcome, Error: errText, Started: now, Finished: now, RetryAt: now})
			}
		}
		if len(rs) != 1 {
			return fmt.Errorf("claimed %d jobs with key %s", len(rs), key)
		}
		// Give back the others untouched.
		for _, j := range js {
			if j.Key != key {
				if _, err := tx.exec(ctx, `UPDATE jobs SET state='pending', owner=NULL, lease_until=NULL, attempt=attempt-1 WHERE id=?`, j.ID); err != nil {
					return err
				}
				tx.counts.Move(j.Type, StateRunning, StatePending, 1)
			}
		}
		_, err = finish(ctx, tx, "test", rs, store.FanInDeltas{})
		return err
	})
	if err != nil {
		t.Fatalf("finish %s: %v", key, err)
	}
}

func TestPurgeDeletesOldDoneJobsOnly(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clk, PurgeBatch: 50, PurgePause: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	const old = 50*2 + 17
	var batch []NewJob
	for i := range old {
		batch = append(batch, NewJob{Type: "t", Key: fmt.Sprint("old", i)})
	}
	batch = append(batch, NewJob{Type: "t", Key: "dead"}, NewJob{Type: "t", Key: "pending", RunAt: t0.Add(time.Hour)})
	if _, err := q.EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	finishJob(t, q, "dead", OutcomeDead, "boom")
	// Output gives each successful attempt a row of its own, which purge
	// must delete with its job.
	claimed, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: clk.Now(), Claim: &store.Claim{Lease: time.Minute, N: old, Types: []string{"t"}}})
	if err != nil || len(claimed.Claimed) != old {
		t.Fatalf("claim: %d jobs, %v; want %d", len(claimed.Claimed), err, old)
	}
	var rs []store.Result
	for _, j := range claimed.Claimed {
		rs = append(rs, store.Result{Job: j, Worker: "p/w0", Outcome: OutcomeDone, Output: "ran", Started: clk.Now(), Finished: clk.Now()})
	}
	if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: clk.Now(), Results: rs}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(8 * 24 * time.Hour)
	mustEnqueue(t, q, NewJob{Type: "t", Key: "recent"})
	finishJob(t, q, "recent", OutcomeDone, "")
	var attemptsBefore int
	q.r.QueryRow(`SELECT count(*) FROM attempts`).Scan(&attemptsBefore)

	rep, err := q.Maintain(ctx, 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Purged != old {
		t.Errorf("purged %d, want %d", rep.Purged, old)
	}
	s, _ := q.Stats(ctx)
	if s.Total[StateDone] != 1 || s.Total[StateDead] != 1 || s.Total[StatePending] != 1 {
		t.Errorf("after purge: %v, want the recent done, the dead and the pending job", s.Total)
	}
	var attempts, orphans int
	q.r.QueryRow(`SELECT count(*) FROM attempts`).Scan(&attempts)
	q.r.QueryRow(`SELECT count(*) FROM attempts WHERE job_id NOT IN (SELECT id FROM jobs)`).Scan(&orphans)
	if attempts != attemptsBefore-old || orphans != 0 {
		t.Errorf("attempts %d (was %d), orphans %d: attempts must go with their jobs", attempts, attemptsBefore, orphans)
	}
}

// TestPurgeKeepsKeysUsed: the keys of purged jobs enqueued with a key are
// kept in used_keys, generated keys are not (nothing can enqueue one
// again), and an enqueue under a kept key inserts nothing. (The suite's
// PurgedKeysStayUsed checks the enqueue paths.)
func TestPurgeKeepsKeysUsed(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	keys := []string{"one", "s||2026-03-01T12:00:00Z", "job|not-generated"}
	for _, k := range keys {
		mustEnqueue(t, q, NewJob{Type: "t", Key: k})
		finishJob(t, q, k, OutcomeDone, "")
	}
	gen := mustEnqueue(t, q, NewJob{Type: "t"})
	finishJob(t, q, gen.Key, OutcomeDone, "")
	mustEnqueue(t, q, NewJob{Type: "t", Key: "newest", RunAt: t0.Add(time.Hour)}) // Purge keeps the newest job
	clk.Advance(8 * 24 * time.Hour)
	if rep, err := q.Maintain(ctx, 7*24*time.Hour); err != nil || rep.Purged != 4 {
		t.Fatalf("Maintain = %+v, %v; want 4 purged", rep, err)
	}
	var kept []string
	rows, err := q.r.Query(`SELECT key FROM used_keys ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		kept = append(kept, k)
	}
	rows.Close()
	want := slices.Sorted(slices.Values(keys))
	if !slices.Equal(kept, want) {
		t.Errorf("used keys = %q, want %q (not the generated %s)", kept, want, gen.Key)
	}
	if r := mustEnqueue(t, q, NewJob{Type: "t", Key: "one"}); r.Inserted || !r.Purged || r.ID != 0 {
		t.Errorf("Enqueue of a purged key: %+v, want nothing inserted, Purged", r)
	}
	if _, err := jobByRef(ctx, q, "one"); !errors.Is(err, ErrNotFound) {
		t.Errorf("job one was enqueued again: %v", err)
	}
}

// TestBackup: a backup opens, read-only, with the jobs.
func TestBackup(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	for i := range 5 {
		mustEnqueue(t, q, NewJob{Type: "t", Key: fmt.Sprint("k", i)})
	}
	backup := t.TempDir() + "/backup.db"
	if err := q.Backup(ctx, backup); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, backup, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if s, _ := b.Stats(ctx); s.Total[StatePending] != 5 {
		t.Errorf("backup holds %v", s.Total)
	}
}
