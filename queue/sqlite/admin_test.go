package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"scheduler/clock"

	"scheduler/queue/store"
)

// finishJob claims the job with key and records outcome for it, as a pool
// would, at the queue clock's now.
func finishJob(t *testing.T, q *Store, key string, outcome Outcome, errText string) {
	t.Helper()
	ctx := context.Background()
	err := q.inTx(ctx, false, func(tx txn) error {
		now := q.clock.Now()
		js, _, err := claim(ctx, tx, now, claimRequest{owner: "test", lease: time.Minute, n: 1 << 20, types: jobTypes(t, q)})
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
			}
		}
		_, err = finish(ctx, tx, "test", rs)
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
	claimed, err := q.Trip(ctx, store.Trip{Owner: "p", Now: clk.Now(), Claim: &store.Claim{Lease: time.Minute, N: old, Types: []string{"t"}}})
	if err != nil || len(claimed.Claimed) != old {
		t.Fatalf("claim: %d jobs, %v; want %d", len(claimed.Claimed), err, old)
	}
	var rs []store.Result
	for _, j := range claimed.Claimed {
		rs = append(rs, store.Result{Job: j, Worker: "p/w0", Outcome: OutcomeDone, Output: "ran", Started: clk.Now(), Finished: clk.Now()})
	}
	if _, err := q.Trip(ctx, store.Trip{Owner: "p", Now: clk.Now(), Results: rs}); err != nil {
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

// TestPurgeKeepsKeysUsed: after retain_done, the key of a purged job that
// was enqueued with a key stays used on every enqueue path (a single insert
// on its own, a transaction's rows, a 100-row statement, a schedule's
// Advance), while generated keys are not kept.
func TestPurgeKeepsKeysUsed(t *testing.T) {
	t.Parallel()
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprint("nosync=", noSync), func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(t0)
			q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clk, NoSyncEnqueue: noSync})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			ctx := context.Background()
			keys := []string{"one", "batch", "s||2026-03-01T12:00:00Z", "job|not-generated"}
			for _, k := range keys {
				mustEnqueue(t, q, NewJob{Type: "t", Key: k})
				finishJob(t, q, k, OutcomeDone, "")
			}
			gen := mustEnqueue(t, q, NewJob{Type: "t"})
			finishJob(t, q, gen.Key, OutcomeDone, "")
			clk.Advance(8 * 24 * time.Hour)
			if rep, err := q.Maintain(ctx, 7*24*time.Hour); err != nil || rep.Purged != 5 {
				t.Fatalf("Maintain = %+v, %v; want 5 purged", rep, err)
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

			used := func(what string, r Enqueued) {
				t.Helper()
				if r.Inserted || !r.Purged || r.ID != 0 {
					t.Errorf("%s: %+v, want nothing inserted, Purged", what, r)
				}
			}
			used("Enqueue", mustEnqueue(t, q, NewJob{Type: "t", Key: "one"}))
			res, err := q.EnqueueBatch(ctx, []NewJob{{Type: "t", Key: "one"}, {Type: "t", Key: "new"}})
			if err != nil {
				t.Fatal(err)
			}
			used("EnqueueBatch of 2", res[0])
			if !res[1].Inserted {
				t.Errorf("EnqueueBatch of 2: new key not inserted: %+v", res[1])
			}
			var big []NewJob
			for i := range batchRows + 5 {
				big = append(big, NewJob{Type: "t", Key: fmt.Sprint("big", i)})
			}
			big[3].Key, big[batchRows+2].Key = "batch", "job|not-generated"
			res, err = q.EnqueueBatch(ctx, big)
			if err != nil {
				t.Fatal(err)
			}
			used("100-row statement", res[3])
			used("row after the 100", res[batchRows+2])
			if !res[0].Inserted || !res[batchRows+4].Inserted {
				t.Errorf("fresh keys of the batch not inserted: %+v, %+v", res[0], res[batchRows+4])
			}
			at := t0.Add(-8 * 24 * time.Hour)
			if _, err := q.Advance(ctx, Advance{Schedule: "s", To: at}); err != nil {
				t.Fatal(err)
			}
			res, err = q.Advance(ctx, Advance{Schedule: "s", From: at, To: at, Jobs: []NewJob{
				{Type: "t", Key: "s||2026-03-01T12:00:00Z", Schedule: "s", ScheduledAt: at, SkipIfActive: true}}})
			if err != nil {
				t.Fatal(err)
			}
			used("Advance", res[0])
			for _, k := range keys {
				if _, err := jobByRef(ctx, q, k); !errors.Is(err, ErrNotFound) {
					t.Errorf("job %s was enqueued again: %v", k, err)
				}
			}
		})
	}
}

func TestLastRunsAndBackup(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	for i, at := range []time.Time{t0, t0.Add(time.Hour), t0.Add(-time.Hour)} {
		mustEnqueue(t, q, NewJob{Type: "t", Key: fmt.Sprint("n", i), Schedule: "nightly", ScheduledAt: at})
	}
	mustEnqueue(t, q, NewJob{Type: "t", Key: "h", Schedule: "hourly", ScheduledAt: t0})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "one-off"})
	last, err := q.LastRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 2 || last["nightly"].Key != "n1" || last["hourly"].Key != "h" {
		t.Errorf("LastRuns = %v", last)
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
