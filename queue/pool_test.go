package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"

	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
)

func newTestPool(t testing.TB, q *Client, cfg PoolConfig) *Pool {
	t.Helper()
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if cfg.jitter == nil {
		cfg.jitter = func(n time.Duration) time.Duration { return n - 1 } // top of the range: delays are exact
	}
	p, err := NewPool(q, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// advanceUntil moves the fake clock in steps until cond holds. Stepping
// (rather than one jump) lets timers created between steps fire too.
func advanceUntil(t testing.TB, clk *clock.Fake, step time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (fake time %v)", what, clk.Now())
		}
		clk.Advance(step)
		time.Sleep(time.Millisecond) // lets other goroutines observe the step; not a sync point
	}
}

func TestPoolClaimsInPriorityThenRunAtOrder(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	mustEnqueue(t, q, NewJob{Type: "t", Key: "late-low", RunAt: t0.Add(-time.Minute)})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "early-low", RunAt: t0.Add(-time.Hour)})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "high", Priority: 5, RunAt: t0})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "future", Priority: 9, RunAt: t0.Add(time.Hour)})
	p := newTestPool(t, q, PoolConfig{Workers: 1})
	order := make(chan string, 4)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { order <- j.Key; return nil }), TypeConfig{})
	runPool(t, p)
	for _, want := range []string{"high", "early-low", "late-low"} {
		if got := waitFor(t, order); got != want {
			t.Fatalf("ran %q, want %q", got, want)
		}
	}
	select {
	case k := <-order:
		t.Fatalf("ran %q before its run_at", k)
	default:
	}
}

func TestPoolRunsAtRunAtWithoutPolling(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{})
	ran := make(chan time.Time, 1)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { ran <- clk.Now(); return nil }), TypeConfig{})
	runPool(t, p)
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k", RunAt: t0.Add(10 * time.Second)})
	advanceUntil(t, clk, time.Second, "job to run", func() bool { return len(ran) > 0 })
	if at := <-ran; at.Before(t0.Add(10 * time.Second)) {
		t.Errorf("ran at %v, before its run_at", at)
	}
}

func TestPoolRetriesWithBackoffThenDead(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{})
	var mu sync.Mutex
	var runAts []time.Time // each attempt's run_at: the instant its retry was scheduled for
	p.Register("fail", HandlerFunc(func(ctx context.Context, j *Job) error {
		mu.Lock()
		runAts = append(runAts, j.RunAt)
		mu.Unlock()
		return fmt.Errorf("attempt %d failed", j.Attempt)
	}), TypeConfig{Backoff: 4 * time.Second, MaxBackoff: time.Minute})
	runPool(t, p)
	mustEnqueue(t, q, NewJob{Type: "fail", Key: "k", MaxAttempts: 4})
	advanceUntil(t, clk, 500*time.Millisecond, "job dead", func() bool { return mustJob(t, q, "k").State == StateDead })
	mu.Lock()
	defer mu.Unlock()
	if len(runAts) != 4 {
		t.Fatalf("%d attempts, want 4", len(runAts))
	}
	as, err := q.Attempts(context.Background(), mustJob(t, q, "k").ID)
	if err != nil || len(as) != 4 {
		t.Fatalf("attempts = %d, %v", len(as), err)
	}
	// The jitter is fixed at the top of its range, so each retry is scheduled
	// exactly 4s, 8s, 16s after the failure before it, and starts no earlier.
	for i, want := range []time.Duration{4 * time.Second, 8 * time.Second, 16 * time.Second} {
		if got := runAts[i+1].Sub(as[i].FinishedAt); got != want {
			t.Errorf("retry %d scheduled %v after failure, want %v", i+1, got, want)
		}
		if as[i+1].StartedAt.Before(runAts[i+1]) {
			t.Errorf("attempt %d started at %v, before its run_at %v", i+2, as[i+1].StartedAt, runAts[i+1])
		}
	}
	j := mustJob(t, q, "k")
	if j.Attempt != 4 || !strings.Contains(j.LastError, "attempt 4 failed") || j.FinishedAt.IsZero() {
		t.Errorf("job = attempt %d, last error %q, finished %v", j.Attempt, j.LastError, j.FinishedAt)
	}
	var outcomes []string
	for _, a := range as {
		outcomes = append(outcomes, fmt.Sprintf("%d:%s", a.Number, a.Outcome))
	}
	if got, want := strings.Join(outcomes, " "), "1:retry 2:retry 3:retry 4:dead"; got != want {
		t.Errorf("attempts = %s, want %s", got, want)
	}
}

func TestPoolOutcomes(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{})
	p.Register("permanent", HandlerFunc(func(ctx context.Context, j *Job) error {
		return Permanent(errors.New("bad input"))
	}), TypeConfig{})
	p.Register("later", HandlerFunc(func(ctx context.Context, j *Job) error {
		if j.Attempt == 1 {
			return RetryAfter(time.Hour, errors.New("rate limited"))
		}
		return nil
	}), TypeConfig{})
	p.Register("panic", HandlerFunc(func(ctx context.Context, j *Job) error {
		panic("handler bug")
	}), TypeConfig{})
	p.Register("output", HandlerFunc(func(ctx context.Context, j *Job) error {
		j.SetOutput([]byte(strings.Repeat("x", MaxOutput) + "tail"))
		return nil
	}), TypeConfig{})
	runPool(t, p)
	mustEnqueue(t, q, NewJob{Type: "permanent", Key: "p", MaxAttempts: 5})
	mustEnqueue(t, q, NewJob{Type: "later", Key: "l", MaxAttempts: 5})
	mustEnqueue(t, q, NewJob{Type: "panic", Key: "x", MaxAttempts: 1})
	mustEnqueue(t, q, NewJob{Type: "nobody", Key: "u", MaxAttempts: 5})
	mustEnqueue(t, q, NewJob{Type: "output", Key: "o"})

	eventually(t, "permanent dead", func() bool { return mustJob(t, q, "p").State == StateDead })
	if j := mustJob(t, q, "p"); j.Attempt != 1 || !strings.Contains(j.LastError, "bad input") {
		t.Errorf("permanent: attempt %d error %q", j.Attempt, j.LastError)
	}
	eventually(t, "panic dead", func() bool { return mustJob(t, q, "x").State == StateDead })
	if j := mustJob(t, q, "x"); !strings.Contains(j.LastError, "handler bug") || !strings.Contains(j.LastError, "goroutine") {
		t.Errorf("panic error %q lacks the value or the stack", j.LastError)
	}
	eventually(t, "retry scheduled", func() bool { j := mustJob(t, q, "l"); return j.State == StatePending && j.Attempt == 1 })
	if j := mustJob(t, q, "l"); !j.RunAt.Equal(clk.Now().Add(time.Hour)) {
		t.Errorf("RetryAfter: run_at %v, want %v", j.RunAt, clk.Now().Add(time.Hour))
	}
	advanceUntil(t, clk, 10*time.Minute, "retried job done", func() bool { return mustJob(t, q, "l").State == StateDone })
	eventually(t, "output recorded", func() bool { return mustJob(t, q, "o").State == StateDone })
	// A type without a handler is not this pool's to run: it waits.
	if j := mustJob(t, q, "u"); j.State != StatePending || j.Attempt != 0 {
		t.Errorf("job without a handler: %s attempt %d error %q, want pending", j.State, j.Attempt, j.LastError)
	}
	// The last attempt is the one that ran to the end (the 10-minute steps
	// of the clock above may have let an earlier lease lapse).
	as, _ := q.Attempts(context.Background(), mustJob(t, q, "o").ID)
	if last := as[len(as)-1]; last.Outcome != OutcomeDone || len(last.Output) != MaxOutput || !strings.HasSuffix(last.Output, "tail") {
		t.Errorf("attempt %s kept %d bytes of output, want the last %d", last.Outcome, len(last.Output), MaxOutput)
	}
}

func TestPoolTypeConcurrencyLimit(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{Workers: 8})
	var active, peak atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	p.Register("limited", HandlerFunc(func(ctx context.Context, j *Job) error {
		n := active.Add(1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		started <- struct{}{}
		<-release
		active.Add(-1)
		return nil
	}), TypeConfig{Concurrency: 2})
	free := make(chan struct{}, 10)
	p.Register("free", HandlerFunc(func(ctx context.Context, j *Job) error { free <- struct{}{}; return nil }), TypeConfig{})
	for i := range 6 {
		mustEnqueue(t, q, NewJob{Type: "limited", Key: fmt.Sprint("l", i)})
	}
	for i := range 3 {
		mustEnqueue(t, q, NewJob{Type: "free", Key: fmt.Sprint("f", i)})
	}
	runPool(t, p)
	waitFor(t, started)
	waitFor(t, started)
	// Other types are not held up by the limited one.
	for range 3 {
		waitFor(t, free)
	}
	if n := active.Load(); n != 2 {
		t.Fatalf("%d limited jobs running, want 2", n)
	}
	close(release)
	for range 4 {
		waitFor(t, started)
	}
	eventually(t, "all done", func() bool {
		s, _ := q.Stats(context.Background())
		return s.Total[StateDone] == 9
	})
	if peak.Load() != 2 {
		t.Errorf("peak concurrency %d, want 2", peak.Load())
	}
}

func TestPoolTimeoutIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{})
	p.Register("slow", HandlerFunc(func(ctx context.Context, j *Job) error {
		<-ctx.Done() // the per-type deadline
		return ctx.Err()
	}), TypeConfig{Timeout: 20 * time.Millisecond})
	runPool(t, p)
	mustEnqueue(t, q, NewJob{Type: "slow", Key: "k", MaxAttempts: 1})
	eventually(t, "timed-out job dead", func() bool { return mustJob(t, q, "k").State == StateDead })
	if j := mustJob(t, q, "k"); !strings.Contains(j.LastError, "deadline exceeded") {
		t.Errorf("last error %q, want a deadline", j.LastError)
	}
}

func TestPoolHeartbeatExtendsLease(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{Lease: 30 * time.Second})
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	p.Register("long", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-release
		return nil
	}), TypeConfig{})
	runPool(t, p)
	mustEnqueue(t, q, NewJob{Type: "long", Key: "k"})
	waitFor(t, started)
	first := mustJob(t, q, "k").LeaseUntil
	// Two minutes of fake time: four lease lengths.
	advanceUntil(t, clk, time.Second, "two minutes", func() bool { return clk.Now().Sub(t0) >= 2*time.Minute })
	eventually(t, "lease extended", func() bool {
		return mustJob(t, q, "k").LeaseUntil.After(clk.Now())
	})
	if n, err := reclaim(context.Background(), q); err != nil || n != 0 {
		t.Errorf("Reclaim took %d heartbeating jobs (%v), want 0", n, err)
	}
	if j := mustJob(t, q, "k"); j.State != StateRunning || !j.LeaseUntil.After(first) {
		t.Errorf("job %s lease %v (first %v)", j.State, j.LeaseUntil, first)
	}
	close(release)
	eventually(t, "done", func() bool { return mustJob(t, q, "k").State == StateDone })
}

func TestPoolShutdownGraceThenRelease(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{ShutdownGrace: 10 * time.Second})
	started := make(chan string, 2)
	finishQuick := make(chan struct{})
	p.Register("quick", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- j.Key
		<-finishQuick
		return nil
	}), TypeConfig{})
	p.Register("stubborn", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- j.Key
		<-ctx.Done()
		return ctx.Err()
	}), TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "quick", Key: "quick", MaxAttempts: 1})
	mustEnqueue(t, q, NewJob{Type: "stubborn", Key: "stubborn", MaxAttempts: 1})
	stop := runPool(t, p)
	waitFor(t, started)
	waitFor(t, started)
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	// Claiming stops at once: a new job is not taken during the grace.
	eventually(t, "pool stopping", func() bool { return p.stopping.Load() })
	mustEnqueue(t, q, NewJob{Type: "quick", Key: "late"})
	close(finishQuick)
	eventually(t, "quick job done within grace", func() bool { return mustJob(t, q, "quick").State == StateDone })
	select {
	case <-stopped:
		t.Fatal("Run returned before the grace ran out")
	default:
	}
	advanceUntil(t, clk, time.Second, "Run to return", func() bool {
		select {
		case <-stopped:
			return true
		default:
			return false
		}
	})
	j := mustJob(t, q, "stubborn")
	if j.State != StatePending || j.Attempt != 0 {
		t.Errorf("interrupted job: state %s attempt %d, want pending with the attempt given back", j.State, j.Attempt)
	}
	as, _ := q.Attempts(context.Background(), j.ID)
	if len(as) != 1 || as[0].Outcome != OutcomeReleased {
		t.Errorf("attempts = %+v, want one released", as)
	}
	if j := mustJob(t, q, "late"); j.State != StatePending || j.Attempt != 0 {
		t.Errorf("job enqueued during shutdown: %s attempt %d, want untouched", j.State, j.Attempt)
	}
}

// TestStaleCompletionIsRejected: a worker whose lease was reclaimed (it
// stalled) and whose job was claimed again elsewhere cannot overwrite the
// new attempt's result.
func TestStaleCompletionIsRejected(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	clkA := clock.NewFake(t0)
	qa, err := openSQLite(ctx, path, sqlite.Config{Clock: clkA})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qa.Close() }) // after the pool stops: its cleanup runs first
	// B lives two minutes later: A's lease (1m) has expired in B's eyes.
	clkB := clock.NewFake(t0.Add(2 * time.Minute))
	qb, err := openSQLite(ctx, path, sqlite.Config{Clock: clkB})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qb.Close() }) // after the pool stops: its cleanup runs first

	pa := newTestPool(t, qa, PoolConfig{Owner: "A", Lease: time.Minute, MaintenanceEvery: -1})
	startedA, releaseA := make(chan struct{}, 1), make(chan struct{})
	pa.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		startedA <- struct{}{}
		<-releaseA
		return errors.New("A failed late")
	}), TypeConfig{})
	mustEnqueue(t, qa, NewJob{Type: "t", Key: "k", MaxAttempts: 5})
	runPool(t, pa)
	waitFor(t, startedA)

	if n, err := reclaim(ctx, qb); err != nil || n != 1 {
		t.Fatalf("Reclaim = %d, %v; want 1", n, err)
	}
	pb := newTestPool(t, qb, PoolConfig{Owner: "B", MaintenanceEvery: -1})
	doneB := make(chan int, 1)
	pb.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { doneB <- j.Attempt; return nil }), TypeConfig{})
	runPool(t, pb)
	if got := waitFor(t, doneB); got != 2 {
		t.Fatalf("B ran attempt %d, want 2", got)
	}
	eventually(t, "B's result recorded", func() bool { return mustJob(t, qb, "k").State == StateDone })
	close(releaseA)
	j := mustJob(t, qb, "k")
	eventually(t, "A's stale attempt recorded", func() bool {
		as, _ := qb.Attempts(ctx, j.ID)
		return len(as) == 3
	})
	j = mustJob(t, qb, "k")
	if j.State != StateDone || j.Attempt != 2 || j.LastError != "" {
		t.Errorf("job = %s attempt %d error %q: A's late failure overwrote B's success", j.State, j.Attempt, j.LastError)
	}
	as, _ := qb.Attempts(ctx, j.ID)
	var got []string
	for _, a := range as {
		got = append(got, fmt.Sprintf("%d:%s:%s", a.Number, a.Worker[:1], a.Outcome))
	}
	if want := "1:A:lease_expired 1:A:stale 2:B:done"; strings.Join(got, " ") != want {
		t.Errorf("attempts = %s, want %s", strings.Join(got, " "), want)
	}
}

// TestTwoPoolsNeverRunTheSameJobConcurrently runs two pools, each on its own
// connection set as two processes would, on one file.
func TestTwoPoolsNeverRunTheSameJobConcurrently(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	const n = 400
	var mu sync.Mutex
	active := map[int64]string{}
	runs := map[int64]int{}
	var overlap atomic.Int32
	handler := func(owner string) Handler {
		return HandlerFunc(func(ctx context.Context, j *Job) error {
			mu.Lock()
			if _, busy := active[j.ID]; busy {
				overlap.Add(1)
			}
			active[j.ID] = owner
			runs[j.ID]++
			mu.Unlock()
			mu.Lock()
			delete(active, j.ID)
			mu.Unlock()
			return nil
		})
	}
	var qs []*Client
	for _, owner := range []string{"A", "B"} {
		q, err := openSQLite(ctx, path, sqlite.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() }) // after the pool stops: its cleanup runs first
		qs = append(qs, q)
		p := newTestPool(t, q, PoolConfig{Owner: owner, Workers: 4})
		p.Register("t", handler(owner), TypeConfig{})
		runPool(t, p)
	}
	// Half the jobs arrive while both pools are idle and racing for them,
	// the rest in one batch.
	for i := range n / 2 {
		mustEnqueue(t, qs[i%2], NewJob{Type: "t", Key: fmt.Sprint(i)})
	}
	var batch []NewJob
	for i := n / 2; i < n; i++ {
		batch = append(batch, NewJob{Type: "t", Key: fmt.Sprint(i)})
	}
	if _, err := qs[1].EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "all done", func() bool {
		s, _ := qs[0].Stats(ctx)
		return s.Total[StateDone] == n
	})
	mu.Lock()
	defer mu.Unlock()
	if overlap.Load() != 0 {
		t.Errorf("%d concurrent runs of one job", overlap.Load())
	}
	for id, c := range runs {
		if c != 1 {
			t.Errorf("job %d ran %d times", id, c)
		}
	}
	if len(runs) != n {
		t.Errorf("%d jobs ran, want %d", len(runs), n)
	}
}

func TestPoolNoticesAnotherProcessesEnqueue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	daemon, err := openSQLite(ctx, path, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Close() }) // after the pool stops: its cleanup runs first
	cli, err := openSQLite(ctx, path, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// MaxIdle is long: only the data_version watch can explain a prompt start.
	p := newTestPool(t, daemon, PoolConfig{MaxIdle: time.Hour})
	ran := make(chan string, 1)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { ran <- j.Key; return nil }), TypeConfig{})
	runPool(t, p)
	mustEnqueue(t, cli, NewJob{Type: "t", Key: "from-cli"})
	if got := waitFor(t, ran); got != "from-cli" {
		t.Fatalf("ran %q", got)
	}
}

// TestBusyPoolWithBacklogDoesNotSpin: with every worker busy and ready jobs
// waiting, the loop sleeps until a worker frees up instead of re-checking a
// run_at that is already past.
func TestBusyPoolWithBacklogDoesNotSpin(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{Workers: 2})
	started, release := make(chan struct{}, 5), make(chan struct{})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-release
		return nil
	}), TypeConfig{})
	for i := range 5 {
		mustEnqueue(t, q, NewJob{Type: "t", Key: fmt.Sprint(i)})
	}
	runPool(t, p)
	waitFor(t, started)
	waitFor(t, started)
	before := p.rounds.Load()
	// Real time passes; the fake clock does not, so nothing may wake the loop.
	time.Sleep(50 * time.Millisecond) // an observation window, not a sync point
	if n := p.rounds.Load() - before; n > 5 {
		t.Errorf("loop ran %d times in 50ms with nothing to do", n)
	}
	close(release)
	eventually(t, "all done", func() bool { s, _ := q.Stats(context.Background()); return s.Total[StateDone] == 5 })
}

// registerLimited registers type "t" on p with a concurrency of 1 and a
// handler that reports each start on started and returns once release is
// called.
func registerLimited(p *Pool) (started <-chan struct{}, release func()) {
	st, rel := make(chan struct{}, 8), make(chan struct{})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		st <- struct{}{}
		<-rel
		return nil
	}), TypeConfig{Concurrency: 1})
	var once sync.Once
	return st, func() { once.Do(func() { close(rel) }) }
}

// TestTypeAtItsLimitDoesNotSpin fills a type's concurrency limit while
// more of its jobs are ready and workers are free: the loop must wait for
// a job to finish, not wake again and again at the ready jobs' past run_at.
func TestTypeAtItsLimitDoesNotSpin(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{Workers: 4})
	started, release := registerLimited(p)
	for i := range 3 {
		mustEnqueue(t, q, NewJob{Type: "t", Key: fmt.Sprint(i)})
	}
	runPool(t, p)
	waitFor(t, started)
	before := p.rounds.Load()
	// Real time passes; the fake clock does not, so nothing may wake the loop.
	time.Sleep(50 * time.Millisecond) // an observation window, not a sync point
	if n := p.rounds.Load() - before; n > 5 {
		t.Errorf("loop ran %d times in 50ms with nothing it could take", n)
	}
	release()
	eventually(t, "all done", func() bool { s, _ := q.Stats(context.Background()); return s.Total[StateDone] == 3 })
}

// TestBlockedPoolStillStartsOtherTypesOnTime: while one type waits at its
// limit, a job of another type that becomes ready later starts when its
// time comes (within the blocked loop's recheck), not after MaxIdle.
func TestBlockedPoolStillStartsOtherTypesOnTime(t *testing.T) {
	t.Parallel()
	// No watch wake-ups: the pool's own commits would wake it through the
	// file watch, or through the poll when the clock moves.
	q, clk := newTestQueueConfig(t, sqlite.Config{NoFileWatch: true})
	p := newTestPool(t, q, PoolConfig{Workers: 4, MaintenanceEvery: -1, WatchInterval: time.Hour})
	started, release := registerLimited(p)
	defer release()
	ran := make(chan struct{}, 1)
	p.Register("u", HandlerFunc(func(ctx context.Context, j *Job) error { ran <- struct{}{}; return nil }), TypeConfig{})
	for i := range 3 {
		mustEnqueue(t, q, NewJob{Type: "t", Key: fmt.Sprint(i)})
	}
	mustEnqueue(t, q, NewJob{Type: "u", Key: "later", RunAt: clk.Now().Add(time.Second)})
	runPool(t, p)
	waitFor(t, started)
	// Parked: the watch's, the checkpointer's and the loop's timers.
	clk.BlockUntil(3)
	clk.Advance(time.Second + blockedRecheck)
	waitFor(t, ran)
}

// TestPrefetchHoldsBoundedWork: the pool claims ahead while its jobs are
// short, 32 per worker and at least 64 by default, so that a pool records
// its jobs in large transactions, but never more than 16 × PrefetchBelow of
// expected work per worker; long jobs are never claimed ahead.
func TestPrefetchHoldsBoundedWork(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ms := time.Millisecond
	for _, tc := range []struct {
		workers, prefetch int
		avgRun            time.Duration
		want              int
	}{
		{1, 0, -1, 1},     // no job finished yet: no prefetch
		{1, 0, 0, 1 + 64}, // jobs take no time
		{1, 0, 100 * time.Microsecond, 1 + 64},
		{1, 0, 2 * ms, 1 + 40}, // 80 ms of work
		{1, 0, 4 * ms, 1 + 20}, // 80 ms of work
		{1, 0, 5 * ms, 1},      // not short
		{2, 0, 2 * ms, 2 + 64}, // 160 ms of work allows 80
		{8, 0, 100 * time.Microsecond, 8 + 256},
		{8, 0, 2 * ms, 8 + 256},  // 32 per worker hold 64 ms each
		{8, 0, 4 * ms, 8 + 160},  // 80 ms each
		{1, 200, 1 * ms, 1 + 80}, // a set Prefetch is bounded in time too
		{4, 10, 1 * ms, 4 + 10},
		{4, -1, 0, 4},
	} {
		p, err := NewPool(q, PoolConfig{Workers: tc.workers, Prefetch: tc.prefetch, MaintenanceEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		l := &loop{p: p, claims: claimState{avgRun: tc.avgRun}}
		if got := l.capacity(); got != tc.want {
			t.Errorf("%d workers, Prefetch %d, jobs of %s: capacity %d, want %d", tc.workers, tc.prefetch, tc.avgRun, got, tc.want)
		}
	}
}

// TestPoolDoesNotPrefetchLastAttempts: while its jobs are short the pool
// claims ahead of its workers, but not a job on its last attempt, which a
// crash would otherwise make dead without its having started.
func TestPoolDoesNotPrefetchLastAttempts(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{Workers: 1, MaintenanceEvery: -1})
	started, release := make(chan string, 8), make(chan struct{})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- j.Key
		if j.Key == "blocker" {
			<-release
		}
		return nil
	}), TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "warm"})
	runPool(t, p)
	// The fake clock makes every job take 0s: short, so the pool prefetches.
	if k := waitFor(t, started); k != "warm" {
		t.Fatalf("started %s, want warm", k)
	}
	eventually(t, "warm done", func() bool { return mustJob(t, q, "warm").State == StateDone })
	_, err := q.EnqueueBatch(context.Background(), []NewJob{
		{Type: "t", Key: "blocker"},
		{Type: "t", Key: "x"},
		{Type: "t", Key: "y", MaxAttempts: 1},
		{Type: "t", Key: "z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if k := waitFor(t, started); k != "blocker" {
		t.Fatalf("started %s, want blocker", k)
	}
	if j := mustJob(t, q, "x"); j.State != StateRunning {
		t.Errorf("x is %s, want running (prefetched)", j.State)
	}
	for _, k := range []string{"y", "z"} {
		if j := mustJob(t, q, k); j.State != StatePending || j.Attempt != 0 {
			t.Errorf("%s is %s at attempt %d while the only worker is busy; want pending, no attempt spent", k, j.State, j.Attempt)
		}
	}
	close(release)
	var order []string
	for range 3 {
		order = append(order, waitFor(t, started))
	}
	if strings.Join(order, " ") != "x y z" {
		t.Errorf("ran %v, want x y z", order)
	}
	eventually(t, "all done", func() bool { s, _ := q.Stats(context.Background()); return s.Total[StateDone] == 5 })
}

// TestBlockedPoolSleepsOnceTheJobsAreGone: a pool waiting at a type's limit
// rechecks every blockedRecheck; once the jobs it waited for are gone (here
// cancelled; another pool may have taken them), it must stop rechecking.
func TestBlockedPoolSleepsOnceTheJobsAreGone(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueueConfig(t, sqlite.Config{NoFileWatch: true})
	p := newTestPool(t, q, PoolConfig{Workers: 4, MaintenanceEvery: -1, WatchInterval: time.Hour})
	started, release := registerLimited(p)
	defer release()
	mustEnqueue(t, q, NewJob{Type: "t", Key: "running"})
	waiting := mustEnqueue(t, q, NewJob{Type: "t", Key: "waiting"})
	runPool(t, p)
	waitFor(t, started)
	if _, err := q.RequestCancel(context.Background(), waiting.ID, "test"); err != nil {
		t.Fatal(err)
	}
	// Parked: the watch's, the checkpointer's and the loop's timers.
	clk.BlockUntil(3)
	before := p.rounds.Load()
	for range 10 {
		clk.Advance(blockedRecheck)
		clk.BlockUntil(3)
	}
	if n := p.rounds.Load() - before; n > 3 {
		t.Errorf("loop ran %d times in 10 rechecks after the waiting job was cancelled", n)
	}
}

// TestPoolHeartbeatsThroughShutdown: a job still running after stop, in
// the grace and after it (a command in its kill grace), keeps its lease
// until its result is committed, so no other pool can reclaim it and run
// it twice, or make it dead on its last attempt.
func TestPoolHeartbeatsThroughShutdown(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueueConfig(t, sqlite.Config{NoFileWatch: true})
	p := newTestPool(t, q, PoolConfig{Lease: 30 * time.Second, ShutdownGrace: time.Minute, MaintenanceEvery: -1, WatchInterval: time.Hour})
	started, release := make(chan struct{}, 1), make(chan struct{})
	p.Register("slow", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-release // ignores ctx for a while, as a command does in its kill grace
		return ctx.Err()
	}), TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "slow", Key: "k", MaxAttempts: 1})
	stop := runPool(t, p)
	waitFor(t, started)
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	eventually(t, "pool stopping", func() bool { return p.stopping.Load() })
	// Three minutes of fake time: six leases, past the grace and far into
	// what a kill grace would be.
	for range 180 {
		clk.Advance(time.Second)
		eventually(t, fmt.Sprintf("lease renewed at %v", clk.Now().Sub(t0)), func() bool {
			return mustJob(t, q, "k").LeaseUntil.After(clk.Now())
		})
		if n, err := reclaim(context.Background(), q); err != nil || n != 0 {
			t.Fatalf("at %v Reclaim took %d jobs (%v): a running job's lease lapsed", clk.Now().Sub(t0), n, err)
		}
	}
	close(release)
	waitFor(t, stopped)
	j := mustJob(t, q, "k")
	if j.State != StatePending || j.Attempt != 0 {
		t.Errorf("job: %s attempt %d, want pending with its attempt given back", j.State, j.Attempt)
	}
	as, _ := q.Attempts(context.Background(), j.ID)
	if len(as) != 1 || as[0].Outcome != OutcomeReleased {
		t.Errorf("attempts = %+v, want one released", as)
	}
}

// TestPoolProbeNeedsTheLoop: an idle pool answers a probe at once; a pool
// whose loop is stuck (here on the handler table's lock, in its claim)
// answers none until it comes round again.
func TestPoolProbeNeedsTheLoop(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{MaintenanceEvery: -1})
	ran := make(chan struct{}, 1)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { ran <- struct{}{}; return nil }), TypeConfig{})
	runPool(t, p)
	// Idle: the watch's, the checkpointer's and the loop's timers.
	clk.BlockUntil(3)
	waitFor(t, p.Probe())
	p.mu.Lock()
	before := p.rounds.Load()
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k"})
	// Past answering probes and on its way to the claim, which needs p.mu.
	eventually(t, "loop woken", func() bool { return p.rounds.Load() > before })
	probe := p.Probe()
	select {
	case <-probe:
		t.Fatal("a stuck loop answered a probe")
	default:
	}
	p.mu.Unlock()
	waitFor(t, probe)
	waitFor(t, ran)
}

// TestPoolClaimsOnlyItsTypes: a job whose type has no handler in this pool
// waits, untouched, instead of going dead at its first claim (it may be a
// task added to the file before a reload, or one that a newer binary beside
// this one runs); a Register while the pool runs starts it at once, and the
// pools table tells other processes which types wait for a handler.
func TestPoolClaimsOnlyItsTypes(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueueConfig(t, sqlite.Config{NoFileWatch: true})
	ctx := context.Background()
	// MaxIdle and WatchInterval are long, the file is not watched, the
	// clock stands still: only the Register can wake the pool for the new
	// type.
	p := newTestPool(t, q, PoolConfig{MaintenanceEvery: -1, MaxIdle: time.Hour, WatchInterval: time.Hour})
	ran := make(chan string, 4)
	handler := HandlerFunc(func(ctx context.Context, j *Job) error { ran <- j.Key; return nil })
	p.Register("old", handler, TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "new", Key: "new-1", MaxAttempts: 1, RunAt: t0.Add(-time.Minute)})
	mustEnqueue(t, q, NewJob{Type: "new", Key: "new-2", MaxAttempts: 1})
	mustEnqueue(t, q, NewJob{Type: "old", Key: "old"})
	h, err := q.Unhandled(ctx)
	if err != nil || !h.Known || h.Pools != 0 || len(h.Waiting) != 2 {
		t.Fatalf("Handlers before any pool = %+v, %v; want no pool and both types waiting", h, err)
	}
	runPool(t, p)
	if k := waitFor(t, ran); k != "old" {
		t.Fatalf("ran %s, want old", k)
	}
	eventually(t, "old done", func() bool { return mustJob(t, q, "old").State == StateDone })
	clk.BlockUntil(3) // idle
	for _, k := range []string{"new-1", "new-2"} {
		if j := mustJob(t, q, k); j.State != StatePending || j.Attempt != 0 || j.LastError != "" {
			t.Errorf("%s: %s attempt %d error %q, want pending and untouched", k, j.State, j.Attempt, j.LastError)
		}
	}
	h, err = q.Unhandled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Waiting{{Type: "new", Ready: 2, Oldest: time.Minute}}
	if h.Pools != 1 || fmt.Sprint(h.Waiting) != fmt.Sprint(want) {
		t.Errorf("Handlers = %d pools, waiting %+v; want 1 pool, waiting %+v", h.Pools, h.Waiting, want)
	}
	p.Register("new", handler, TypeConfig{})
	got := []string{waitFor(t, ran), waitFor(t, ran)}
	slices.Sort(got)
	if strings.Join(got, " ") != "new-1 new-2" {
		t.Errorf("after Register ran %v, want new-1 new-2", got)
	}
	eventually(t, "types recorded", func() bool {
		h, err := q.Unhandled(ctx)
		return err == nil && h.Pools == 1 && len(h.Waiting) == 0
	})
}

// TestStoppedPoolRecordIsGone: a pool that stops removes its record, and a
// record that stopped being renewed (a crashed pool) no longer counts.
func TestStoppedPoolRecordIsGone(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	ctx := context.Background()
	recordPool(t, q, "crashed", clk.Now())
	p := newTestPool(t, q, PoolConfig{MaintenanceEvery: -1})
	p.Register("u", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
	stop := runPool(t, p)
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k"})
	eventually(t, "two pools", func() bool { h, _ := q.Unhandled(ctx); return h.Pools == 2 })
	if h, _ := q.Unhandled(ctx); len(h.Waiting) != 0 {
		t.Errorf("waiting %+v while the crashed pool's record is fresh", h.Waiting)
	}
	stop()
	clk.Advance(store.AliveWithin + time.Second)
	h, err := q.Unhandled(ctx)
	if err != nil || h.Pools != 0 || len(h.Waiting) != 1 || h.Waiting[0].Type != "t" {
		t.Errorf("Handlers = %+v, %v; want no pool, t waiting", h, err)
	}
}

// recordPool writes the row of a pool of another process, handling the
// type t, last seen at seen.
func recordPool(t *testing.T, q *Client, owner string, seen time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: seen,
		Presence: &store.Presence{Types: []string{"t"}, Process: Process{PID: 7, Host: "elsewhere", Version: "v0"}}}); err != nil {
		t.Fatal(err)
	}
}

// TestPoolRowDescribesItsProcess: Announce writes the pool's row with its
// process (pid, host, version) before Run, and forgets the rows of pools
// gone for a week while it keeps younger ones for the operator; the idle
// pool renews its row on its one timer, every presenceEvery, and deletes it
// at stop.
func TestPoolRowDescribesItsProcess(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	ctx := context.Background()
	recordPool(t, q, "crashed last week", t0.Add(-store.PresenceKept-time.Minute))
	recordPool(t, q, "crashed yesterday", t0.Add(-24*time.Hour))
	p := newTestPool(t, q, PoolConfig{Owner: "me", Process: Process{PID: 42, Host: "h", Version: "v1"},
		MaintenanceEvery: -1, MaxIdle: time.Hour, WatchInterval: time.Hour})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
	if err := p.Announce(ctx); err != nil {
		t.Fatal(err)
	}
	ds, err := q.Pools(ctx)
	if err != nil || len(ds) != 2 {
		t.Fatalf("Daemons after Announce = %+v, %v; want me and the pool crashed yesterday", ds, err)
	}
	me := ds[0]
	if me.Owner != "me" || me.PID != 42 || me.Host != "h" || me.Version != "v1" || !me.StartedAt.Equal(t0) || !me.LastSeen.Equal(t0) || !me.Alive(t0) {
		t.Errorf("Daemons[0] = %+v; want me, pid 42 on h, v1, started and seen at %v, alive", me, t0)
	}
	if ds[1].Owner != "crashed yesterday" || ds[1].Alive(t0) {
		t.Errorf("Daemons[1] = %+v; want the pool crashed yesterday, not alive", ds[1])
	}
	if !me.Alive(t0.Add(store.AliveWithin)) || me.Alive(t0.Add(store.AliveWithin+time.Millisecond)) {
		t.Errorf("a row seen at %v counts as alive until %v and no longer", t0, t0.Add(store.AliveWithin))
	}

	stop := runPool(t, p)
	clk.BlockUntil(3) // idle
	clk.Advance(presenceEvery)
	eventually(t, "the row renewed", func() bool {
		ds, _ := q.Pools(ctx)
		return len(ds) == 2 && ds[0].Owner == "me" && ds[0].LastSeen.Equal(t0.Add(presenceEvery)) && ds[0].StartedAt.Equal(t0)
	})
	stop()
	if ds, err := q.Pools(ctx); err != nil || len(ds) != 1 || ds[0].Owner != "crashed yesterday" {
		t.Errorf("after stop: Daemons = %+v, %v; want only the pool crashed yesterday", ds, err)
	}
}

// TestSetProcessRewritesTheRow: the row of a running pool records the
// config of its process, and SetProcess (a reload) rewrites it at once,
// without waiting for the renewal, keeping the pool's pid, host and
// version.
func TestSetProcessRewritesTheRow(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	ctx := context.Background()
	loaded := t0.Add(-time.Minute)
	p := newTestPool(t, q, PoolConfig{Owner: "me", Process: Process{PID: 42, Host: "h", Version: "v1", Config: "aaa", ConfigAt: loaded},
		MaintenanceEvery: -1, MaxIdle: time.Hour, WatchInterval: time.Hour})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
	if err := p.Announce(ctx); err != nil {
		t.Fatal(err)
	}
	if ds, err := q.Pools(ctx); err != nil || len(ds) != 1 || ds[0].Config != "aaa" || !ds[0].ConfigAt.Equal(loaded) {
		t.Fatalf("Daemons after Announce = %+v, %v; want config aaa loaded at %v", ds, err, loaded)
	}
	runPool(t, p)
	clk.BlockUntil(3) // idle, its renewal presenceEvery away
	p.SetProcess(Process{Config: "bbb", ConfigAt: t0})
	eventually(t, "the row rewritten", func() bool {
		ds, _ := q.Pools(ctx)
		return len(ds) == 1 && ds[0].Config == "bbb"
	})
	ds, _ := q.Pools(ctx)
	if d := ds[0]; !d.ConfigAt.Equal(t0) || d.PID != 42 || d.Host != "h" || d.Version != "v1" || !d.LastSeen.Equal(t0) {
		t.Errorf("row after SetProcess = %+v; want config bbb loaded at %v, pid 42 on h, v1, seen at %v", d, t0, t0)
	}
}

// TestPoolRowGoneAsStopBegins: a stopping pool claims nothing more, so its
// row goes as the stop begins, not once its running jobs are done: no other
// process counts on it to run a type or as a running daemon.
func TestPoolRowGoneAsStopBegins(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	p := newTestPool(t, q, PoolConfig{Owner: "me", ShutdownGrace: time.Hour, MaintenanceEvery: -1})
	started, release := make(chan struct{}, 1), make(chan struct{})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-release
		return nil
	}), TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k"})
	stop := runPool(t, p)
	waitFor(t, started)
	if ds, err := q.Pools(ctx); err != nil || len(ds) != 1 || ds[0].Owner != "me" {
		t.Fatalf("Daemons while running = %+v, %v; want me", ds, err)
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	eventually(t, "the row deleted", func() bool { ds, err := q.Pools(ctx); return err == nil && len(ds) == 0 })
	if j := mustJob(t, q, "k"); j.State != StateRunning {
		t.Errorf("job %s when the row went, want still running", j.State)
	}
	close(release)
	waitFor(t, stopped)
	if j := mustJob(t, q, "k"); j.State != StateDone {
		t.Errorf("job %s after the stop, want done", j.State)
	}
}

// TestPoolCutEndsTheGrace: Cut during the shutdown cancels running jobs at
// once, long before the grace is over, and gives them back; Run returns
// once that is recorded.
func TestPoolCutEndsTheGrace(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{ShutdownGrace: time.Hour, MaintenanceEvery: -1})
	started := make(chan struct{}, 1)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}), TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k", MaxAttempts: 1})
	stop := runPool(t, p)
	waitFor(t, started)
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	eventually(t, "pool stopping", func() bool { return p.stopping.Load() })
	p.EndGrace()
	waitFor(t, stopped) // the fake clock never reaches the grace
	if j := mustJob(t, q, "k"); j.State != StatePending || j.Attempt != 0 {
		t.Errorf("job after Cut: %s attempt %d, want pending with its attempt given back", j.State, j.Attempt)
	}
}

// txLog is a Store that keeps the transactions made through it, to tell what the
// loop asked for at each.
type txLog struct {
	store.Engine
	mu  sync.Mutex
	txs []store.PoolTx
}

func (s *txLog) CommitPoolTx(ctx context.Context, t store.PoolTx) (store.PoolTxResult, error) {
	res, err := s.Engine.CommitPoolTx(ctx, t)
	s.mu.Lock()
	s.txs = append(s.txs, t)
	s.mu.Unlock()
	return res, err
}

// finishing returns the transactions that recorded results.
func (s *txLog) finishing() []store.PoolTx {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.PoolTx
	for _, t := range s.txs {
		if len(t.Results) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// waitIdle waits until p's loop waits with no job in flight. An enqueue
// after it wakes the loop, whose claim then takes the job: a wake-up that
// came during a transaction would instead be taken after it, and make the loop
// claim once more.
func waitIdle(t testing.TB, p *Pool) {
	t.Helper()
	eventually(t, "the loop idle", func() bool { return p.idleUntil.Load() != 0 })
}

// TestIdlePoolRecordsACompletionWithoutClaiming: once a claim took every
// ready job, a job that finishes frees a slot no job waits for, and the
// transaction that records it claims nothing (nor looks after it); the next
// enqueue wakes the loop as before.
func TestIdlePoolRecordsACompletionWithoutClaiming(t *testing.T) {
	t.Parallel()
	inner, _ := newTestQueue(t)
	log := &txLog{Engine: inner.Engine()}
	q, _ := New(log, Config{})
	p := newTestPool(t, q, PoolConfig{Workers: 4})
	ran := make(chan string, 2)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		ran <- j.Key
		return nil
	}), TypeConfig{})
	runPool(t, p)
	for _, key := range []string{"a", "b"} {
		waitIdle(t, p)
		mustEnqueue(t, q, NewJob{Type: "t", Key: key})
		if got := waitFor(t, ran); got != key {
			t.Fatalf("ran %q, want %q", got, key)
		}
		eventually(t, key+" recorded", func() bool { return mustJob(t, q, key).State == StateDone })
	}
	for _, tr := range log.finishing() {
		if tr.Claim != nil {
			t.Errorf("the transaction recording %d result(s) also claimed up to %d jobs, though none was ready", len(tr.Results), tr.Claim.N)
		}
	}
}

// TestIdlePoolWakesForTheRetryOfItsLastJob: a failed attempt frees a slot
// no job waits for, but its retry is a job that becomes ready later; the
// transaction that records it looks again, and the idle loop's timer is set for
// the retry, not for MaxIdle.
func TestIdlePoolWakesForTheRetryOfItsLastJob(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{Workers: 2, MaxIdle: time.Hour})
	ran := make(chan int, 2)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		ran <- j.Attempt
		return errors.New("failed")
	}), TypeConfig{Backoff: 4 * time.Second})
	runPool(t, p)
	waitIdle(t, p)
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k", MaxAttempts: 2})
	waitFor(t, ran)
	eventually(t, "the retry recorded", func() bool { return mustJob(t, q, "k").State == StatePending })
	// The loop set idleUntil to 0 before the transaction that recorded the
	// retry: once it is set again, the loop waits for what it looked up
	// after that transaction.
	waitIdle(t, p)
	if got, want := time.Unix(0, p.idleUntil.Load()).UTC(), mustJob(t, q, "k").RunAt; !got.Equal(want) {
		t.Errorf("the idle loop wakes at %v, want the retry's run_at %v", got, want)
	}
}

// TestDefaultLoggerBuildsNoLine: without a Logger, the client and its pools
// discard before building a line, so a drain spends nothing on the "job
// done" line of each job.
func TestDefaultLoggerBuildsNoLine(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p, err := NewPool(q, PoolConfig{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if q.log.Enabled(ctx, slog.LevelError) || p.log.Enabled(ctx, slog.LevelError) {
		t.Error("the default logger is enabled: it formats lines to discard them")
	}
}
