package queue

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// engines are the storage engines a test of the pool runs on: the budget
// is kept by the pool, from what every engine returns of a claimed job.
var engines = []string{"sqlite", "postgres"}

// newEngineQueue is newTestQueue on engine; on PostgreSQL the store decides
// with the fake clock too, and the test is skipped without a test database.
func newEngineQueue(t *testing.T, engine string) (*Client, *clock.Fake) {
	t.Helper()
	if engine == "sqlite" {
		return newTestQueue(t)
	}
	clk := clock.NewFake(t0)
	s, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Config{Clock: clk, LocalClock: true})
	if err != nil {
		t.Fatal(err)
	}
	q := mustNew(t, s)
	return q, clk
}

// attemptsOf returns a job's attempts as "number:outcome error" lines.
func attemptsOf(t *testing.T, q *Client, key string) []string {
	t.Helper()
	as, err := q.Attempts(context.Background(), mustJob(t, q, key).ID)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range as {
		lines = append(lines, fmt.Sprintf("%d:%s %s", a.Number, a.Outcome, a.Error))
	}
	return lines
}

func TestGiveUpAfterEndsRetries(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testGiveUpAfterEndsRetries(t, engine)
		})
	}
}

func testGiveUpAfterEndsRetries(t *testing.T, engine string) {
	q, clk := newEngineQueue(t, engine)
	p := newTestPool(t, q, PoolConfig{})
	attempts := make(chan int, 10)
	p.Register("fail", HandlerFunc(func(ctx context.Context, j *Job) error {
		attempts <- j.Attempt
		return fmt.Errorf("attempt %d failed", j.Attempt)
	}), TypeConfig{Backoff: 4 * time.Second, MaxBackoff: time.Minute, GiveUpAfter: 10 * time.Second})
	runPool(t, p)
	// Enqueued at t0, the budget ends at t0+10s. The first attempt fails
	// at t0 and its retry is due at t0+4s, inside the budget; the second
	// fails at t0+4s and its retry would be due at t0+12s, after it.
	mustEnqueue(t, q, NewJob{Type: "fail", Key: "k", MaxAttempts: 10})
	waitFor(t, attempts)
	eventually(t, "retry scheduled", func() bool {
		j := mustJob(t, q, "k")
		return j.State == StatePending && j.RunAt.Equal(t0.Add(4*time.Second))
	})
	clk.Advance(4 * time.Second)
	waitFor(t, attempts)
	eventually(t, "job dead", func() bool { return mustJob(t, q, "k").State == StateDead })
	want := []string{
		"1:retry attempt 1 failed",
		"2:dead gave up after 10s (give_up_after): attempt 2 failed",
	}
	if got := attemptsOf(t, q, "k"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if j := mustJob(t, q, "k"); !strings.HasPrefix(j.LastError, "gave up after 10s (give_up_after)") {
		t.Errorf("last error = %q", j.LastError)
	}
}

func TestGiveUpAfterStopsAClaimedJobFromStarting(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testGiveUpAfterStopsAClaimedJobFromStarting(t, engine)
		})
	}
}

func testGiveUpAfterStopsAClaimedJobFromStarting(t *testing.T, engine string) {
	q, clk := newEngineQueue(t, engine)
	p := newTestPool(t, q, PoolConfig{})
	var ran atomic.Int32
	p.Register("report", HandlerFunc(func(ctx context.Context, j *Job) error {
		ran.Add(1)
		return nil
	}), TypeConfig{GiveUpAfter: 6 * time.Hour})
	// A job of no instant counts from its enqueue: it may not start 6h
	// after it, however late its run_at.
	mustEnqueue(t, q, NewJob{Type: "report", Key: "enqueued", RunAt: t0.Add(7 * time.Hour)})
	clk.Advance(7 * time.Hour)
	now := clk.Now()
	// The nightly report of an instant 6h ago, found by a daemon that was
	// down: its budget counts from the instant, not from now.
	mustEnqueue(t, q, NewJob{Type: "report", Key: "instant", Schedule: "nightly", ScheduledAt: now.Add(-6 * time.Hour)})
	// Inside its budget: runs.
	mustEnqueue(t, q, NewJob{Type: "report", Key: "on-time", Schedule: "nightly", ScheduledAt: now.Add(-time.Hour)})
	runPool(t, p)
	eventually(t, "jobs finished", func() bool {
		return mustJob(t, q, "instant").State == StateDead && mustJob(t, q, "enqueued").State == StateDead &&
			mustJob(t, q, "on-time").State == StateDone
	})
	if n := ran.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1 (the job inside its budget)", n)
	}
	for _, key := range []string{"instant", "enqueued"} {
		want := "1:dead gave up after 6h (give_up_after)"
		if got := attemptsOf(t, q, key); len(got) != 1 || got[0] != want {
			t.Errorf("attempts of %s = %q, want [%q]", key, got, want)
		}
	}
}

// TestRetryRenewsGiveUpAfter: an operator's Retry gives the job a whole
// budget from the retry, of the type's length, whether its budget had ended
// (the job gave up) or not (it died of a permanent error inside it). The
// type's budget is 6h; the retry comes at t0+2h, so the new budget ends at
// t0+8h: a retry due 1ms before it is kept, one due at it gives up.
func TestRetryRenewsGiveUpAfter(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		for _, tc := range []struct {
			name        string
			scheduledAt time.Time // the job's instant
			first       string    // its first attempt, which ends in dead
		}{
			// Due 7h before t0: claimed at t0, past its budget, it gives
			// up without running.
			{"gave up", t0.Add(-7 * time.Hour), "1:dead gave up after 6h (give_up_after)"},
			// Due at t0: it runs at once and fails permanently, 6h before
			// its budget ends.
			{"within budget", t0, "1:dead permanent: attempt 1 failed"},
		} {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				testRetryRenewsGiveUpAfter(t, engine, tc.scheduledAt, tc.first)
			})
		}
	}
}

func testRetryRenewsGiveUpAfter(t *testing.T, engine string, scheduledAt time.Time, first string) {
	q, clk := newEngineQueue(t, engine)
	p := newTestPool(t, q, PoolConfig{})
	p.Register("report", HandlerFunc(func(ctx context.Context, j *Job) error {
		err := fmt.Errorf("attempt %d failed", j.Attempt)
		switch j.Attempt {
		case 1:
			return Permanent(err)
		case 2: // at t0+2h, the retry: again at t0+8h-1ms, inside the new budget
			return RetryAfter(6*time.Hour-time.Millisecond, err)
		default: // at t0+8h-1ms: again at t0+8h, where the new budget ends
			return RetryAfter(time.Millisecond, err)
		}
	}), TypeConfig{GiveUpAfter: 6 * time.Hour})
	runPool(t, p)
	id := mustEnqueue(t, q, NewJob{Type: "report", Key: "k", Schedule: "nightly", ScheduledAt: scheduledAt, MaxAttempts: 10}).ID
	eventually(t, "job dead", func() bool { return mustJob(t, q, "k").State == StateDead })
	clk.Advance(2 * time.Hour)
	if err := q.Retry(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "second attempt ended", func() bool {
		j := mustJob(t, q, "k")
		return j.Attempt >= 2 && j.State != StateRunning
	})
	if j := mustJob(t, q, "k"); j.State != StatePending || !j.RunAt.Equal(t0.Add(8*time.Hour-time.Millisecond)) {
		t.Fatalf("after the retry's attempt: %s, run at %v; want pending, run at t0+8h-1ms; attempts %q",
			j.State, j.RunAt, attemptsOf(t, q, "k"))
	}
	clk.Advance(6*time.Hour - time.Millisecond)
	eventually(t, "job dead", func() bool { return mustJob(t, q, "k").State == StateDead })
	want := []string{
		first,
		"2:retry retry after 5h59m59.999s: attempt 2 failed",
		"3:dead gave up after 6h (give_up_after): retry after 1ms: attempt 3 failed",
	}
	if got := attemptsOf(t, q, "k"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("attempts =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if j := mustJob(t, q, "k"); !j.RetriedAt.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("RetriedAt = %v, want %v", j.RetriedAt, t0.Add(2*time.Hour))
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]string{
		6 * time.Hour:                  "6h",
		90 * time.Minute:               "1h30m",
		10 * time.Minute:               "10m",
		90 * time.Second:               "1m30s",
		time.Hour + time.Second:        "1h0m1s",
		1500 * time.Millisecond:        "1.5s",
		0:                              "0s",
		10*time.Hour + 10*time.Second:  "10h0m10s",
		100*time.Hour + 20*time.Minute: "100h20m",
		30 * time.Second:               "30s",
	} {
		if got := ShortDuration(in); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", in, got, want)
		}
	}
}
