package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// claimOne claims the one ready job of type t for owner at now, on a
// minute's lease, failing the test unless there is exactly one.
func claimOne(t *testing.T, q store.Engine, owner string, now time.Time) *store.Job {
	t.Helper()
	js := claim(t, q, owner, now, time.Minute, 1, "t")
	if len(js) != 1 {
		t.Fatalf("claim by %s: %d jobs, want 1", owner, len(js))
	}
	return js[0]
}

// testFenceAfterReclaim: a worker whose lease was reclaimed, and whose job
// was claimed again by a pool on another store, changes nothing with its
// late result, which is recorded as a stale attempt; and the same owner,
// having lost its job and claimed it again, is fenced off by the attempt.
func testFenceAfterReclaim(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	ctx := context.Background()
	e := mustEnqueue(t, a, store.NewJob{Type: "t", MaxAttempts: 3})
	old := claimOne(t, a, "A", t0)
	later := t0.Add(2 * time.Minute)
	res, err := b.CommitPoolTx(ctx, store.PoolTx{Owner: "B", Now: later, Reclaim: true, Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"t"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reclaimed) != 1 || res.Reclaimed[0] != (store.Reclaimed{ID: e.ID, Attempt: 1, Owner: "A"}) {
		t.Fatalf("Reclaimed = %+v", res.Reclaimed)
	}
	if len(res.Claimed) != 1 || res.Claimed[0].Attempt != 2 {
		t.Fatalf("Claimed = %+v", res.Claimed)
	}
	for _, o := range []store.Outcome{store.OutcomeDone, store.OutcomeRetry, store.OutcomeDead, store.OutcomeReleased, store.OutcomeCancelled} {
		res, err = a.CommitPoolTx(ctx, store.PoolTx{Owner: "A", Now: later, Results: []store.Result{{Job: old, Worker: "A/1", Outcome: o, RetryAt: later, Started: t0, Finished: later}}})
		if err != nil || res.Fenced[0] {
			t.Fatalf("late %s result = %+v, %v; want fence failed", o, res, err)
		}
	}
	j, err := a.Job(ctx, e.ID)
	if err != nil || j.State != store.StateRunning || j.Owner != "B" || j.Attempt != 2 {
		t.Fatalf("job = %+v, %v; want running under B at attempt 2", j, err)
	}
	as, err := a.Attempts(ctx, e.ID)
	if err != nil || len(as) != 6 || as[0].Outcome != store.OutcomeLeaseExpired || as[1].Outcome != store.OutcomeStale || as[5].Outcome != store.OutcomeStale {
		t.Fatalf("Attempts = %+v, %v; want the expired lease and five stale attempts", as, err)
	}

	// The same owner, having lost and claimed the job again, is fenced by
	// the attempt.
	e2 := mustEnqueue(t, a, store.NewJob{Type: "t", RunAt: later, Priority: 1})
	first := claimOne(t, a, "A", later)
	if first.ID != e2.ID {
		t.Fatalf("claimed %d, want %d", first.ID, e2.ID)
	}
	much := later.Add(time.Hour)
	res, err = a.CommitPoolTx(ctx, store.PoolTx{Owner: "A", Now: much, Reclaim: true, Heartbeat: much.Add(time.Hour), Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"t"}}})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != e2.ID || res.Claimed[0].Attempt != 2 {
		t.Fatalf("reclaim and claim again = %+v, %v", res, err)
	}
	res, err = a.CommitPoolTx(ctx, store.PoolTx{Owner: "A", Now: much, Results: []store.Result{{Job: first, Worker: "A/1", Outcome: store.OutcomeDone, Started: later, Finished: much}}})
	if err != nil || res.Fenced[0] {
		t.Fatalf("late result of attempt 1 = %+v, %v; want fence failed", res, err)
	}
	if j, _ := a.Job(ctx, e2.ID); j.State != store.StateRunning || j.Attempt != 2 {
		t.Fatalf("job = %+v; want still running attempt 2", j)
	}
}

// testResultsReleaseRetryDeadRetry walks a job through a release (its
// attempt given back), a retry, death on its last attempt, a Retry with a
// fresh set of attempts, a cancel request and a retry after it, which ends
// it cancelled; the attempts come back in that order.
func testResultsReleaseRetryDeadRetry(t *testing.T, su *suite) {
	t.Parallel()
	s, _ := su.open(t)
	ctx := context.Background()
	e := mustEnqueue(t, s, store.NewJob{Type: "t", MaxAttempts: 2, Payload: []byte(`{"a": 1}`)})
	finish := func(j *store.Job, o store.Outcome, retryAt time.Time) {
		t.Helper()
		res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: "o", Now: t0, Results: []store.Result{{Job: j, Worker: "w", Outcome: o, Error: "boom", Output: "out", RetryAt: retryAt, Started: t0, Finished: t0}}})
		if err != nil || !res.Fenced[0] {
			t.Fatalf("finish %s = %+v, %v", o, res, err)
		}
	}
	c := claimOne(t, s, "o", t0)
	if c.ID != e.ID || c.Owner != "o" || c.Attempt != 1 || !c.LeaseUntil.Equal(t0.Add(time.Minute)) || string(c.Payload) != `{"a": 1}` || !c.StartedAt.Equal(t0) {
		t.Fatalf("claimed %+v", c)
	}
	finish(c, store.OutcomeReleased, time.Time{})
	j, _ := s.Job(ctx, e.ID)
	if j.State != store.StatePending || j.Attempt != 0 || j.Owner != "" {
		t.Fatalf("released: %+v", j)
	}
	finish(claimOne(t, s, "o", t0), store.OutcomeRetry, t0)
	j2 := claimOne(t, s, "o", t0)
	if !j2.LastAttempt() {
		t.Fatalf("attempt %d of %d: want the last", j2.Attempt, j2.MaxAttempts)
	}
	finish(j2, store.OutcomeDead, time.Time{})
	j, _ = s.Job(ctx, e.ID)
	if j.State != store.StateDead || j.LastError != "boom" || !j.FinishedAt.Equal(t0) {
		t.Fatalf("dead: %+v", j)
	}
	if err := s.Retry(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Retry(ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Retry of a pending job: %v", err)
	}
	j, _ = s.Job(ctx, e.ID)
	if j.State != store.StatePending || j.Attempt != 2 || j.MaxAttempts != 4 || !j.FinishedAt.IsZero() {
		t.Fatalf("retried: %+v; want pending at attempt 2 of 4", j)
	}
	run := claimOne(t, s, "o", t0)
	if st, err := s.RequestCancel(ctx, e.ID, "op"); err != nil || st != store.StateRunning {
		t.Fatalf("RequestCancel = %s, %v", st, err)
	}
	reqs, err := s.CancelRequests(ctx, "o")
	if err != nil || len(reqs) != 1 || reqs[0] != (store.CancelRequest{ID: e.ID, Attempt: 3, By: "op"}) {
		t.Fatalf("CancelRequests = %+v, %v", reqs, err)
	}
	finish(run, store.OutcomeRetry, t0)
	if j, _ = s.Job(ctx, e.ID); j.State != store.StateCancelled {
		t.Fatalf("retry after a cancel request: %+v", j)
	}
	as, err := s.Attempts(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := attemptsText(as), "1:released 1:retry 2:dead 3:retry"; got != want {
		t.Errorf("Attempts = %s, want %s", got, want)
	}
	for _, a := range as {
		if a.Worker != "w" || a.Error != "boom" || a.Output != "out" || a.JobID != e.ID {
			t.Errorf("attempt %+v: want worker w, error boom, output out", a)
		}
	}
}

// attemptsText renders attempts as "1:retry 2:done".
func attemptsText(as []store.Attempt) string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%d:%s", a.Number, a.Outcome))
	}
	return strings.Join(out, " ")
}

// testAttemptsInOrder: Attempts lists a job's attempts by number, those of
// one number in the order they were recorded, with a done attempt that
// printed nothing (and so has no record of its own) made up from the job,
// after a stale attempt of a lower number.
func testAttemptsInOrder(t *testing.T, su *suite) {
	t.Parallel()
	s, clk := su.open(t)
	ctx := context.Background()
	result := func(j *store.Job, worker string, o store.Outcome, output string) store.PoolTxResult {
		t.Helper()
		res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: j.Owner, Now: clk.Now(), Results: []store.Result{{Job: j, Worker: worker, Outcome: o,
			Error: string(o), Output: output, RetryAt: clk.Now(), Started: clk.Now(), Finished: clk.Now()}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	quiet := mustEnqueue(t, s, store.NewJob{Type: "t", Key: "quiet"})
	result(claimOne(t, s, "P", clk.Now()), "P/w0", store.OutcomeReleased, "")
	result(claimOne(t, s, "P", clk.Now()), "P/w0", store.OutcomeRetry, "")
	gone := claimOne(t, s, "P", clk.Now())
	clk.Advance(2 * time.Minute)
	if n, err := reclaim(ctx, s); err != nil || n != 1 {
		t.Fatalf("Reclaim = %d, %v", n, err)
	}
	j := claimOne(t, s, "Q", clk.Now())
	if res := result(gone, "P/w1", store.OutcomeDone, "late"); res.Fenced[0] {
		t.Fatal("a late result held its fence")
	}
	clk.Advance(time.Second)
	result(j, "Q/w0", store.OutcomeDone, "")
	as, err := s.Attempts(ctx, quiet.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := attemptsText(as), "1:released 1:retry 2:lease_expired 2:stale 3:done"; got != want {
		t.Fatalf("Attempts = %s, want %s", got, want)
	}
	if d := as[4]; d.Worker != "Q/w0" || !d.FinishedAt.Equal(clk.Now()) || !d.StartedAt.Equal(t0.Add(2*time.Minute)) || d.Output != "" {
		t.Errorf("done attempt made up from the job = %+v, want Q/w0's, started %v, finished %v", d, t0.Add(2*time.Minute), clk.Now())
	}
	if as[3].Worker != "P/w1" || as[3].Output != "late" {
		t.Errorf("stale attempt = %+v, want P/w1's with its output", as[3])
	}
	// A done attempt that printed is recorded once, with its output.
	loud := mustEnqueue(t, s, store.NewJob{Type: "t", Key: "loud"})
	result(claimOne(t, s, "P", clk.Now()), "P/w2", store.OutcomeDone, "hello")
	if as, err := s.Attempts(ctx, loud.ID); err != nil || attemptsText(as) != "1:done" || as[0].Output != "hello" || as[0].Worker != "P/w2" {
		t.Errorf("Attempts of a done job that printed = %+v, %v; want one done attempt with its output", as, err)
	}
	if as, err := s.Attempts(ctx, loud.ID+100); err != nil || len(as) != 0 {
		t.Errorf("Attempts of no job = %+v, %v; want none", as, err)
	}
}

// testRequestCancelStates: RequestCancel returns the state the job was in:
// a pending job is cancelled at once, with who asked in its error; a
// running one is marked, for its pool; a second request keeps the first
// one's author; a finished job is left as it is.
func testRequestCancelStates(t *testing.T, su *suite) {
	t.Parallel()
	s, clk := su.open(t)
	ctx := context.Background()
	pending := mustEnqueue(t, s, store.NewJob{Type: "p", Key: "pending"})
	if st, err := s.RequestCancel(ctx, pending.ID, "alice"); err != nil || st != store.StatePending {
		t.Fatalf("RequestCancel(pending) = %s, %v", st, err)
	}
	if j := mustJob(t, s, "pending"); j.State != store.StateCancelled || j.LastError != "cancelled by alice" || !j.FinishedAt.Equal(t0) {
		t.Errorf("cancelled pending job = %+v", j)
	}
	if st, err := s.RequestCancel(ctx, pending.ID, "bob"); err != nil || st != store.StateCancelled {
		t.Errorf("RequestCancel(cancelled) = %s, %v; want cancelled, left as it was", st, err)
	}
	running := mustEnqueue(t, s, store.NewJob{Type: "t", Key: "running"})
	claimOne(t, s, "P", clk.Now())
	for _, by := range []string{"alice", "bob"} {
		if st, err := s.RequestCancel(ctx, running.ID, by); err != nil || st != store.StateRunning {
			t.Fatalf("RequestCancel(running) by %s = %s, %v", by, st, err)
		}
	}
	if reqs, err := s.CancelRequests(ctx, "P"); err != nil || len(reqs) != 1 || reqs[0].By != "alice" {
		t.Errorf("CancelRequests = %+v, %v; want alice's, the first", reqs, err)
	}
	if j := mustJob(t, s, "running"); j.State != store.StateRunning {
		t.Errorf("running job after a request: %s, want still running", j.State)
	}
	mustEnqueue(t, s, store.NewJob{Type: "d", Key: "done"})
	finishJob(t, s, clk.Now(), "done", store.OutcomeDone, "")
	mustEnqueue(t, s, store.NewJob{Type: "x", Key: "dead"})
	finishJob(t, s, clk.Now(), "dead", store.OutcomeDead, "boom")
	for k, want := range map[string]store.State{"done": store.StateDone, "dead": store.StateDead} {
		id := mustJob(t, s, k).ID
		if st, err := s.RequestCancel(ctx, id, "alice"); err != nil || st != want {
			t.Errorf("RequestCancel(%s) = %s, %v", k, st, err)
		}
		if j := mustJob(t, s, k); j.State != want {
			t.Errorf("%s job after a request: %s", k, j.State)
		}
	}
}

// testMaintainReports: Maintain reclaims expired leases, then purges done
// jobs and skips older than its retention, and reports how many of each;
// a node alone on its database is not skipped.
func testMaintainReports(t *testing.T, su *suite) {
	t.Parallel()
	s, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, s, store.NewJob{Type: "d", Key: "old-done"})
	finishJob(t, s, clk.Now(), "old-done", store.OutcomeDone, "")
	old := []store.Skip{{Schedule: "s", ScheduledAt: t0.Add(-time.Hour), Reason: store.SkipMisfire}, {Schedule: "s", ScheduledAt: t0.Add(-2 * time.Hour), Reason: store.SkipMisfire}}
	if _, err := s.Advance(ctx, store.Advance{Schedule: "s", To: t0, Skips: old}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, s, store.NewJob{Type: "t", Key: "gone", MaxAttempts: 2})
	claimOne(t, s, "gone", clk.Now())
	clk.Advance(48 * time.Hour)
	mustEnqueue(t, s, store.NewJob{Type: "d", Key: "new-done"})
	finishJob(t, s, clk.Now(), "new-done", store.OutcomeDone, "")
	if _, err := s.Advance(ctx, store.Advance{Schedule: "s", From: t0, To: clk.Now(), Skips: []store.Skip{{Schedule: "s", ScheduledAt: clk.Now(), Reason: store.SkipPaused}}}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Maintain(ctx, 24*time.Hour)
	if want := (store.MaintenanceReport{Reclaimed: 1, Purged: 1, Skips: 2}); err != nil || rep != want {
		t.Fatalf("Maintain = %+v, %v; want %+v", rep, err, want)
	}
	if j := mustJob(t, s, "gone"); j.State != store.StatePending {
		t.Errorf("reclaimed job: %s, want pending", j.State)
	}
	mustJob(t, s, "new-done")
	if skips, _ := s.ListSkips(ctx, "s", 10); len(skips) != 1 {
		t.Errorf("skips after Maintain = %+v, want the recent one", skips)
	}
	if rep, err := s.Maintain(ctx, 24*time.Hour); err != nil || rep != (store.MaintenanceReport{}) {
		t.Errorf("second Maintain = %+v, %v; want nothing done", rep, err)
	}
}

// testForwardStepTakesNoLiveLease: after the clock steps forward past the
// end of a lease, as every process on one host sees at once, a store takes
// back no lease before its time is up by elapsed time: not the live
// owner's, which it renews meanwhile by the clock as it stands, nor a dead
// owner's, which it takes back once the lease has run its length. NextWake
// says when that is. A store opened before the step sees it.
func testForwardStepTakesNoLiveLease(t *testing.T, su *suite) {
	t.Parallel()
	a, b, clk := su.openTwo(t)
	ctx := context.Background()
	mustEnqueue(t, a, store.NewJob{Type: "t", Key: "live"})
	mustEnqueue(t, a, store.NewJob{Type: "u", Key: "dead"})
	claim(t, a, "A", t0, time.Minute, 1, "t")
	claim(t, a, "C", t0, time.Minute, 1, "u") // C never heartbeats
	clk.Advance(30 * time.Second)             // both leases have 30 s left
	clk.Step(90 * time.Second)                // now a minute past their end by the wall clock

	// reclaimed takes back what b's Reclaim and PoolTx take back, and counts it.
	reclaimed := func() int {
		t.Helper()
		n, err := reclaim(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.CommitPoolTx(ctx, store.PoolTx{Owner: "B", Now: clk.Now(), Reclaim: true})
		if err != nil {
			t.Fatal(err)
		}
		return n + len(res.Reclaimed)
	}
	if n := reclaimed(); n != 0 {
		t.Fatalf("just after a forward step of 90s, %d leases with 30s left were taken back", n)
	}
	_, lease, err := b.NextWake(ctx, "B", []string{"t", "u"}, nil)
	if want := t0.Add(150 * time.Second); err != nil || !lease.Equal(want) {
		t.Fatalf("NextWake: lease %v, %v; want %v, when the leases' minute is up by elapsed time", lease, err, want)
	}
	// The live owner heartbeats, on time by elapsed time.
	if _, err := a.CommitPoolTx(ctx, store.PoolTx{Owner: "A", Now: clk.Now(), Heartbeat: clk.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(29 * time.Second)
	if n := reclaimed(); n != 0 {
		t.Fatalf("%d leases were taken back a second before their minute was up by elapsed time", n)
	}
	clk.Advance(2 * time.Second)
	if n := reclaimed(); n != 1 {
		t.Fatalf("once the leases' minute was up %d were taken back, want the dead owner's", n)
	}
	if j := mustJob(t, a, "dead"); j.State != store.StatePending {
		t.Errorf("the dead owner's job: %s, want pending again", j.State)
	}
	if j := mustJob(t, a, "live"); j.State != store.StateRunning || j.Owner != "A" {
		t.Errorf("the live owner's job: %s under %q, want running under A", j.State, j.Owner)
	}
}
