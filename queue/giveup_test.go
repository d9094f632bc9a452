package queue

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"scheduler/clock"
	"scheduler/queue/postgres"
	"scheduler/queue/postgres/pgtest"
)

// engines are the storage engines a test of the pool runs on: the budget
// is kept by the pool, from what every engine returns of a claimed job.
var engines = []string{"sqlite", "postgres"}

// newEngineQueue is newTestQueue on engine; on PostgreSQL the store decides
// with the fake clock too, and the test is skipped without a test database.
func newEngineQueue(t *testing.T, engine string) (*Queue, *clock.Fake) {
	t.Helper()
	if engine == "sqlite" {
		return newTestQueue(t)
	}
	clk := clock.NewFake(t0)
	s, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Config{Clock: clk, LocalClock: true})
	if err != nil {
		t.Fatal(err)
	}
	q := New(s, nil)
	t.Cleanup(func() { q.Close() })
	return q, clk
}

// attemptsOf returns a job's attempts as "number:outcome error" lines.
func attemptsOf(t *testing.T, q *Queue, key string) []string {
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
