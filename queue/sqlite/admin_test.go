package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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

func TestReclaimReturnsExpiredLeases(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	ctx := context.Background()
	mustEnqueue(t, q, NewJob{Type: "t", Key: "again", MaxAttempts: 3})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "last", MaxAttempts: 1})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "fresh", MaxAttempts: 1})
	err := q.inTx(ctx, false, func(tx txn) error {
		_, _, err := claim(ctx, tx, clk.Now(), claimRequest{owner: "gone", lease: time.Minute, n: 2, types: `["t"]`})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	if n, _ := q.Reclaim(ctx); n != 0 {
		t.Fatalf("reclaimed %d live leases", n)
	}
	err = q.inTx(ctx, false, func(tx txn) error {
		_, _, err := claim(ctx, tx, clk.Now(), claimRequest{owner: "alive", lease: time.Hour, n: 1, types: `["t"]`})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if n, err := q.Reclaim(ctx); n != 2 || err != nil {
		t.Fatalf("Reclaim = %d, %v; want 2", n, err)
	}
	if j := mustJob(t, q, "again"); j.State != StatePending || j.Attempt != 1 || j.Owner != "" {
		t.Errorf("again: %s attempt %d owner %q, want pending with the attempt spent", j.State, j.Attempt, j.Owner)
	}
	if j := mustJob(t, q, "last"); j.State != StateDead || j.FinishedAt.IsZero() {
		t.Errorf("last: %s, want dead (no attempt left)", j.State)
	}
	if j := mustJob(t, q, "fresh"); j.State != StateRunning || j.Owner != "alive" {
		t.Errorf("fresh: %s owner %q, want running under a live lease", j.State, j.Owner)
	}
	as, _ := q.Attempts(ctx, mustJob(t, q, "again").ID)
	if len(as) != 1 || as[0].Outcome != OutcomeLeaseExpired || as[0].Worker != "gone" {
		t.Errorf("attempts = %+v", as)
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

func TestRetryRevivesDeadJobs(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		mustEnqueue(t, q, NewJob{Type: "t", Key: k, MaxAttempts: 2})
		finishJob(t, q, k, OutcomeDead, "boom")
	}
	dead, err := q.Dead(ctx, 10)
	if err != nil || len(dead) != 3 {
		t.Fatalf("Dead = %d, %v", len(dead), err)
	}
	if err := q.Retry(ctx, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := q.Retry(ctx, dead[0].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Retry = %v, want ErrNotFound", err)
	}
	if j := mustJob(t, q, "a"); j.State != StatePending || j.MaxAttempts-j.Attempt != 2 {
		t.Errorf("revived: %s, %d attempts left, want pending with 2", j.State, j.MaxAttempts-j.Attempt)
	}
	if n, err := q.RetryAllDead(ctx); n != 2 || err != nil {
		t.Errorf("RetryAllDead = %d, %v; want 2", n, err)
	}
	if s, _ := q.Stats(ctx); s.Dead != 0 || s.Total[StatePending] != 3 {
		t.Errorf("stats after retry: %+v", s.Total)
	}
}

// TestRetryGrantsTheOriginalAttemptsEveryTime: each -retry gives a dead job
// its own number of attempts again, not the sum of all it had so far, and
// whether it died of exhausted attempts or of a permanent error.
func TestRetryGrantsTheOriginalAttemptsEveryTime(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	id := mustEnqueue(t, q, NewJob{Type: "t", Key: "k", MaxAttempts: 2}).ID
	left := func() int { j := mustJob(t, q, "k"); return j.MaxAttempts - j.Attempt }
	for round, fails := range [][]Outcome{
		{OutcomeRetry, OutcomeDead}, // attempts exhausted
		{OutcomeRetry, OutcomeDead}, // exhausted again after a retry
		{OutcomeDead},               // a permanent failure on its first attempt
		{OutcomeRetry, OutcomeDead},
	} {
		for _, o := range fails {
			finishJob(t, q, "k", o, "boom")
		}
		if j := mustJob(t, q, "k"); j.State != StateDead {
			t.Fatalf("round %d: %s, want dead", round, j.State)
		}
		if err := q.Retry(ctx, id); err != nil {
			t.Fatalf("round %d: Retry: %v", round, err)
		}
		if got := left(); got != 2 {
			t.Errorf("round %d: %d attempts left after Retry, want 2", round, got)
		}
	}
	if _, err := q.RetryAllDead(ctx); err != nil {
		t.Fatal(err)
	}
	if got := left(); got != 2 {
		t.Errorf("after RetryAllDead of nothing: %d attempts left, want 2", got)
	}
	finishJob(t, q, "k", OutcomeDead, "boom")
	if n, err := q.RetryAllDead(ctx); n != 1 || err != nil {
		t.Fatalf("RetryAllDead = %d, %v", n, err)
	}
	if got := left(); got != 2 {
		t.Errorf("after RetryAllDead: %d attempts left, want 2", got)
	}
}

func TestStatsLookupAndCancel(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	ctx := context.Background()
	a := mustEnqueue(t, q, NewJob{Type: "report", Key: "a", RunAt: t0.Add(-time.Minute)})
	mustEnqueue(t, q, NewJob{Type: "report", Key: "b", RunAt: t0.Add(time.Hour)})
	mustEnqueue(t, q, NewJob{Type: "ping", Key: "12345"})
	clk.Advance(time.Minute)
	s, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts[StatePending]["report"] != 2 || s.Counts[StatePending]["ping"] != 1 {
		t.Errorf("counts = %v", s.Counts)
	}
	if s.OldestReady != 2*time.Minute {
		t.Errorf("OldestReady = %v, want 2m", s.OldestReady)
	}
	if j := mustJob(t, q, fmt.Sprint(a.ID)); j.Key != "a" {
		t.Errorf("by id: %s", j.Key)
	}
	if j := mustJob(t, q, "12345"); j.Type != "ping" {
		t.Errorf("a numeric key that is no id: %s", j.Key)
	}
	if _, err := jobByRef(ctx, q, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing job: %v", err)
	}
	if err := q.Cancel(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := q.Cancel(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second cancel: %v", err)
	}
	if j := mustJob(t, q, "a"); j.State != StateCancelled {
		t.Errorf("state %s, want cancelled", j.State)
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

// TestFinishDoneInGroups completes claimed jobs in groups of every size
// around the statement sizes, one of them after its lease went to another
// pool: that one must be reported stale, left to its new owner and recorded
// as a stale attempt, and every other one done by its worker.
func TestFinishDoneInGroups(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 7, 8, 9, 33, 129, 170} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			ctx := context.Background()
			batch := make([]NewJob, n)
			for i := range batch {
				batch[i] = NewJob{Type: "t", Key: fmt.Sprint("j", i)}
			}
			if _, err := q.EnqueueBatch(ctx, batch); err != nil {
				t.Fatal(err)
			}
			var js []*Job
			err := q.inTx(ctx, false, func(tx txn) (err error) {
				js, _, err = claim(ctx, tx, clk.Now(), claimRequest{owner: "P", lease: time.Minute, n: n, types: `["t"]`})
				return err
			})
			if err != nil || len(js) != n {
				t.Fatalf("claimed %d, %v; want %d", len(js), err, n)
			}
			// The lease of the job in the middle went to pool Q.
			stolen := js[n/2]
			if _, err := q.w.Exec(`UPDATE jobs SET owner = 'Q', attempt = attempt + 1 WHERE id = ?`, stolen.ID); err != nil {
				t.Fatal(err)
			}
			rs := make([]result, n)
			for i, j := range js {
				rs[i] = result{Job: j, Worker: fmt.Sprint("P/w", i%3), Outcome: OutcomeDone, Started: clk.Now(), Finished: clk.Now()}
			}
			var ok []bool
			err = q.inTx(ctx, false, func(tx txn) (err error) {
				ok, err = finish(ctx, tx, "P", rs)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, j := range js {
				got, err := jobByRef(ctx, q, fmt.Sprint(j.ID))
				if err != nil {
					t.Fatal(err)
				}
				as, err := q.Attempts(ctx, j.ID)
				if err != nil {
					t.Fatal(err)
				}
				if j.ID == stolen.ID {
					if ok[i] || got.State != StateRunning || got.Owner != "Q" {
						t.Errorf("stolen job: fenced %t, %s by %q; want rejected, still running by Q", ok[i], got.State, got.Owner)
					}
					if len(as) != 1 || as[0].Outcome != OutcomeStale || as[0].Worker != rs[i].Worker {
						t.Errorf("stolen job: attempts %+v, want one stale attempt of %s", as, rs[i].Worker)
					}
					continue
				}
				if !ok[i] || got.State != StateDone || got.Owner != "" {
					t.Errorf("job %d: fenced %t, %s, owner %q; want done with no lease holder", j.ID, ok[i], got.State, got.Owner)
				}
				if len(as) != 1 || as[0].Outcome != OutcomeDone || as[0].Worker != rs[i].Worker || as[0].Number != 1 {
					t.Errorf("job %d: attempts %+v, want attempt 1 done by %s", j.ID, as, rs[i].Worker)
				}
			}
		})
	}
}

// TestClaimDoesNotPrefetchLastAttempts: past the jobs for free workers, a
// claim stops before a job on its last attempt and leaves it, and every job
// after it, pending with its attempt unspent.
func TestClaimDoesNotPrefetchLastAttempts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prefetch int
		careful  bool
		want     string // keys claimed
		held     bool   // taken and given back
	}{
		{0, false, "a b c", false}, // a free worker for each
		{1, false, "a b c", false}, // b goes to a free worker; c has attempts to spare
		{2, false, "a", true},      // b would be prefetched on its last attempt
		{3, false, "a", true},      // no free worker: a is prefetched, b stops it
		// Careful claims look first and take nothing to give back.
		{1, true, "a b c", false},
		{2, true, "a", false},
		{3, true, "a", false},
	} {
		t.Run(fmt.Sprint(c.prefetch, c.careful), func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			ctx := context.Background()
			_, err := q.EnqueueBatch(ctx, []NewJob{
				{Type: "t", Key: "a", MaxAttempts: 5},
				{Type: "t", Key: "b", MaxAttempts: 1},
				{Type: "t", Key: "c", MaxAttempts: 5},
			})
			if err != nil {
				t.Fatal(err)
			}
			var js []*Job
			var held bool
			err = q.inTx(ctx, false, func(tx txn) (err error) {
				js, held, err = claim(ctx, tx, clk.Now(), claimRequest{owner: "P", lease: time.Minute, n: 3, types: `["t"]`, prefetch: c.prefetch, careful: c.careful})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range js {
				got = append(got, j.Key)
			}
			if strings.Join(got, " ") != c.want || held != c.held {
				t.Fatalf("claimed %q, held %t; want %q, %t", strings.Join(got, " "), held, c.want, c.held)
			}
			for _, k := range []string{"a", "b", "c"} {
				j := mustJob(t, q, k)
				claimed := slices.Contains(got, k)
				if claimed != (j.State == StateRunning) || (!claimed && (j.Attempt != 0 || j.Owner != "")) {
					t.Errorf("job %s: %s attempt %d owner %q; claimed=%t", k, j.State, j.Attempt, j.Owner, claimed)
				}
			}
		})
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	if err := q.Ping(ctx); err != nil {
		t.Fatalf("Ping on an empty queue: %v", err)
	}
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k"})
	if err := q.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	q.Close()
	if err := q.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed queue succeeded")
	}
}
