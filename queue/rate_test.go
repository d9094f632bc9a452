package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
)

// newEngineQueues opens n queues on one fresh database of engine, as n
// processes (or nodes) sharing it, with one fake clock.
func newEngineQueues(t *testing.T, engine string, n int) ([]*Client, *clock.Fake) {
	t.Helper()
	q, clk := newEngineQueue(t, engine)
	qs := []*Client{q}
	var dsn string
	if engine == "postgres" {
		dsn = pgtest.DSN(t)
		qs = nil
	}
	for len(qs) < n {
		var s store.Engine
		var err error
		if engine == "sqlite" {
			var o *Client
			o, err = openSQLite(context.Background(), q.Name(), sqlite.Config{Clock: clk})
			if err == nil {
				t.Cleanup(func() { o.Close() })
				qs = append(qs, o)
			}
		} else {
			s, err = postgres.Open(context.Background(), dsn, postgres.Config{Clock: clk, LocalClock: true})
			if err == nil {
				o, _ := New(s, Config{})
				t.Cleanup(func() { o.Close() })
				qs = append(qs, o)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return qs, clk
}

// runToEachWake drives clk from one wake-up of the pools' loops to the
// next until done: once every loop waits with no job in flight, its timer
// armed past now (Pool.idleUntil), it sets the clock to the earliest of
// those instants, so that a job a loop's timer lets start starts then, not
// a step later. The handlers must not wait on the clock. It returns how
// many times it moved the clock.
func runToEachWake(t *testing.T, clk *clock.Fake, pools []*Pool, done func() bool) (moves int) {
	t.Helper()
	for ; !done(); moves++ {
		var next int64
		eventually(t, "every pool's loop idle, armed past now", func() bool {
			now := clk.Now().UnixNano()
			next = 0
			for _, p := range pools {
				at := p.idleUntil.Load()
				if at <= now {
					return done()
				}
				if next == 0 || at < next {
					next = at
				}
			}
			return true
		})
		if done() {
			return moves
		}
		clk.Set(time.Unix(0, next).UTC())
	}
	return moves
}

// TestRateLimitUnderBacklog is the rate limit's goal: 10 starts a minute
// and a backlog of 1,000 jobs, on one pool and on two pools of two stores
// sharing the database (as two processes on one file, or two nodes): no
// 60-second window holds more than 10 starts, at least 95% of the allowed
// rate is used, and no job spends an attempt waiting.
func TestRateLimitUnderBacklog(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		for _, procs := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d", engine, procs), func(t *testing.T) {
				t.Parallel()
				testRateLimitUnderBacklog(t, engine, procs)
			})
		}
	}
}

func testRateLimitUnderBacklog(t *testing.T, engine string, procs int) {
	const jobs, starts, per = 1000, 10, time.Minute
	qs, clk := newEngineQueues(t, engine, procs)
	var batch []NewJob
	for i := range jobs {
		batch = append(batch, NewJob{Type: "call", Key: fmt.Sprint("c", i), MaxAttempts: 3})
	}
	if _, err := qs[0].EnqueueBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	// Another type's job behind the backlog starts at once.
	mustEnqueue(t, qs[0], NewJob{Type: "other", Key: "other", Priority: -1})
	var mu sync.Mutex
	var at []time.Time
	var retried []string
	var otherAt time.Time
	var pools []*Pool
	for _, q := range qs {
		p := newTestPool(t, q, PoolConfig{Workers: 4})
		p.Register("call", HandlerFunc(func(ctx context.Context, j *Job) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, j.StartedAt)
			if j.Attempt != 1 {
				retried = append(retried, fmt.Sprintf("%s at attempt %d", j.Key, j.Attempt))
			}
			return nil
		}), TypeConfig{Rate: Rate{Starts: starts, Per: per}})
		p.Register("other", HandlerFunc(func(ctx context.Context, j *Job) error {
			mu.Lock()
			defer mu.Unlock()
			otherAt = j.StartedAt
			return nil
		}), TypeConfig{})
		pools = append(pools, p)
	}
	for _, p := range pools {
		runPool(t, p)
	}
	runToEachWake(t, clk, pools, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(at) == jobs
	})
	mu.Lock()
	defer mu.Unlock()
	if !otherAt.Equal(t0) {
		t.Errorf("the job of another type started at %v, want at once (%v)", otherAt, t0)
	}
	if len(retried) > 0 {
		t.Errorf("attempts spent waiting: %v", retried)
	}
	slices.SortFunc(at, time.Time.Compare)
	for i := starts; i < len(at); i++ {
		if d := at[i].Sub(at[i-starts]); d < per {
			t.Fatalf("starts %d to %d (%v to %v) are %d starts within %v", i-starts+1, i+1, at[i-starts], at[i], starts+1, d)
		}
	}
	every := per / starts
	span := at[len(at)-1].Sub(at[0])
	used := float64(time.Duration(len(at)-1)*every) / float64(span)
	t.Logf("%d starts over %v: %.1f%% of the allowed rate", len(at), span, 100*used)
	if used < 0.95 {
		t.Errorf("used %.1f%% of the allowed rate, want at least 95%%", 100*used)
	}
}

// TestRetryAfterPausesTheRateLimit: a job of a rate-limited type whose
// handler says the remote side asks to slow down (RetryAfter) pauses the
// limit of its type: no other job of the type starts before the pause
// ends, although the bucket would allow it.
func TestRetryAfterPausesTheRateLimit(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			q, clk := newEngineQueue(t, engine)
			p := newTestPool(t, q, PoolConfig{Workers: 1})
			var mu sync.Mutex
			var at []string
			p.Register("call", HandlerFunc(func(ctx context.Context, j *Job) error {
				mu.Lock()
				defer mu.Unlock()
				at = append(at, fmt.Sprintf("%s@%v", j.Key, j.StartedAt.Sub(t0)))
				if j.Key == "a" && j.Attempt == 1 {
					return RetryAfter(30*time.Second, errors.New("429 Too Many Requests"))
				}
				return nil
			}), TypeConfig{Rate: Rate{Starts: 1, Per: time.Second}})
			mustEnqueue(t, q, NewJob{Type: "call", Key: "a"})
			mustEnqueue(t, q, NewJob{Type: "call", Key: "b"})
			mustEnqueue(t, q, NewJob{Type: "call", Key: "c"})
			runPool(t, p)
			moves := runToEachWake(t, clk, []*Pool{p}, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(at) == 4
			})
			// The loop sleeps through the pause to its end: a look every
			// blockedRecheck would wake it 300 times.
			t.Logf("the clock moved %d times to the pool's wake-ups", moves)
			if moves > 20 {
				t.Errorf("the pool woke %d times in 32s of fake time, want it to sleep until the buckets allow a start", moves)
			}
			mu.Lock()
			defer mu.Unlock()
			// a at 0 asks for 30s; b and c wait for the pause, then start
			// one a second, before a's retry, whose run_at (30s) comes after
			// theirs in claim order.
			want := "[a@0s b@30s c@31s a@32s]"
			if got := fmt.Sprint(at); got != want {
				t.Errorf("starts %s, want %s", got, want)
			}
		})
	}
}

// TestKeyedRateLimitPassesHeldKeys: with a limit per customer, a customer
// whose limit is paused for an hour holds back its own jobs only: a job of
// another customer enqueued by another process starts at once, and one
// whose run_at is 10 minutes ahead starts then, not at the next look of the
// pool (every MaxIdle, 30s, while the held customer waits).
func TestKeyedRateLimitPassesHeldKeys(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			qs, clk := newEngineQueues(t, engine, 2)
			q, other := qs[0], qs[1]
			p := newTestPool(t, q, PoolConfig{Workers: 2})
			var mu sync.Mutex
			var at []string
			started := func(key string) bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.ContainsFunc(at, func(s string) bool { return strings.HasPrefix(s, key+"@") })
			}
			p.Register("call", HandlerFunc(func(ctx context.Context, j *Job) error {
				mu.Lock()
				defer mu.Unlock()
				at = append(at, fmt.Sprintf("%s@%v", j.Key, j.StartedAt.Sub(t0)))
				if j.Key == "a1" && j.Attempt == 1 {
					return RetryAfter(time.Hour, errors.New("429 Too Many Requests"))
				}
				return nil
			}), TypeConfig{Rate: Rate{Starts: 1, Per: time.Second, Key: func(p json.RawMessage) string {
				var v struct{ Customer string }
				json.Unmarshal(p, &v)
				return v.Customer
			}}})
			acme := json.RawMessage(`{"customer":"acme"}`)
			globex := json.RawMessage(`{"customer":"globex"}`)
			mustEnqueue(t, q, NewJob{Type: "call", Key: "a1", Payload: acme})
			mustEnqueue(t, q, NewJob{Type: "call", Key: "a2", Payload: acme})
			runPool(t, p)
			// a1's retry recorded: its handler's pause, written before its
			// result, holds.
			eventually(t, "a1's retry recorded", func() bool {
				j := mustJob(t, q, "a1")
				return j.State == StatePending && j.RunAt.Equal(t0.Add(time.Hour))
			})
			clk.Advance(time.Second)
			// Its run_at a millisecond ahead: after every claim the pool may
			// have made at this instant (an enqueue in the millisecond of a
			// claim waits up to MaxIdle; see Pool's look).
			mustEnqueue(t, other, NewJob{Type: "call", Key: "b1", Payload: globex, RunAt: clk.Now().Add(time.Millisecond)})
			// Small steps: the SQLite store's watch, which passes the other
			// store's commit on, re-reads on the store's clock.
			advanceUntil(t, clk, time.Millisecond, "b1 started", func() bool { return started("b1") })
			mustEnqueue(t, other, NewJob{Type: "call", Key: "b2", Payload: globex, RunAt: t0.Add(10*time.Minute + 7*time.Second)})
			runToEachWake(t, clk, []*Pool{p}, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(at) == 5
			})
			mu.Lock()
			defer mu.Unlock()
			if len(at) != 5 || !regexp.MustCompile(`^b1@1(\.\d+)?s$`).MatchString(at[1]) {
				t.Fatalf("starts %v, want b1 second, within a second of its enqueue at 1s", at)
			}
			want := "[a1@0s b2@10m7s a2@1h0m0s a1@1h0m1s]"
			if got := fmt.Sprint(slices.Delete(at, 1, 2)); got != want {
				t.Errorf("starts %s but b1, want %s", got, want)
			}
		})
	}
}

// TestRateKeyThatPanicsFailsItsJob: a key function that panics for one
// payload fails that job, dead without running, its error the panic with
// its stack; the pool carries on: the other jobs run, and so does one
// enqueued afterwards. The key function runs once per job, however many
// claims read the job (acme's second job, held back by its bucket, is read
// by each).
func TestRateKeyThatPanicsFailsItsJob(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			q, _ := newEngineQueue(t, engine)
			p := newTestPool(t, q, PoolConfig{Workers: 4})
			var mu sync.Mutex
			ran := map[string]bool{}
			calls := map[string]int{}
			p.Register("call", HandlerFunc(func(ctx context.Context, j *Job) error {
				mu.Lock()
				defer mu.Unlock()
				ran[j.Key] = true
				return nil
			}), TypeConfig{Rate: Rate{Starts: 1, Per: time.Hour, Key: func(p json.RawMessage) string {
				var v struct{ Customer string }
				json.Unmarshal(p, &v)
				mu.Lock()
				calls[v.Customer]++
				mu.Unlock()
				if v.Customer == "boom" {
					panic("no such customer")
				}
				return v.Customer
			}}})
			for _, k := range []string{"acme1", "boom1", "globex1", "acme2"} {
				mustEnqueue(t, q, NewJob{Type: "call", Key: k, Payload: json.RawMessage(`{"customer":"` + strings.TrimRight(k, "12") + `"}`)})
			}
			runPool(t, p)
			done := func(keys ...string) func() bool {
				return func() bool {
					for _, k := range keys {
						if mustJob(t, q, k).State != StateDone {
							return false
						}
					}
					return mustJob(t, q, "boom1").State == StateDead
				}
			}
			eventually(t, "acme1 and globex1 done, boom1 dead", done("acme1", "globex1"))
			mustEnqueue(t, q, NewJob{Type: "call", Key: "initech1", Payload: json.RawMessage(`{"customer":"initech"}`)})
			eventually(t, "initech1 done", done("initech1"))

			j := mustJob(t, q, "boom1")
			if !strings.Contains(j.LastError, "rate limit key: panic: no such customer") || !strings.Contains(j.LastError, "goroutine") {
				t.Errorf("boom1's error %q, want the panic and its stack", j.LastError)
			}
			if st := mustJob(t, q, "acme2").State; st != StatePending {
				t.Errorf("acme2 %s, want pending: its bucket allows one start an hour", st)
			}
			mu.Lock()
			defer mu.Unlock()
			if ran["boom1"] {
				t.Errorf("boom1's handler ran")
			}
			if want := map[string]int{"acme": 2, "boom": 1, "globex": 1, "initech": 1}; !maps.Equal(calls, want) {
				t.Errorf("key function calls %v, want %v: one per job", calls, want)
			}
		})
	}
}
