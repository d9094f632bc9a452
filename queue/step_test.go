package queue

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// TestPoolHeartbeatKeepsItsPeriodAcrossABackwardStep: when the wall clock
// steps back an hour while a job runs, the pool still heartbeats every
// third of its lease by elapsed time, by the clock as it stands, rather
// than waiting an hour for the clock to come back to the instant it had
// set for the next one.
func TestPoolHeartbeatKeepsItsPeriodAcrossABackwardStep(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueueConfig(t, sqlite.Config{NoFileWatch: true})
	p := newTestPool(t, q, PoolConfig{Lease: 30 * time.Second, MaintenanceEvery: -1, WatchInterval: time.Hour})
	started, release := make(chan struct{}, 1), make(chan struct{})
	p.Register("long", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-release
		return nil
	}), TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "long", Key: "k"})
	runPool(t, p)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the pool stops
	waitFor(t, started)
	if got, want := mustJob(t, q, "k").LeaseUntil, t0.Add(30*time.Second); !got.Equal(want) {
		t.Fatalf("lease until %v after the claim, want %v", got, want)
	}
	waitFor(t, p.Probe()) // the loop waits for its heartbeat, 10 s after the claim

	clk.Step(-time.Hour)
	for beat := 1; beat <= 3; beat++ {
		clk.Advance(10 * time.Second)
		want := t0.Add(-time.Hour + time.Duration(beat)*10*time.Second + 30*time.Second)
		eventually(t, "a heartbeat every 10 s by elapsed time", func() bool {
			return mustJob(t, q, "k").LeaseUntil.Equal(want)
		})
		waitFor(t, p.Probe())
	}
	once.Do(func() { close(release) })
	eventually(t, "done", func() bool { return mustJob(t, q, "k").State == StateDone })
}

// TestForwardStepTakesNoLeaseOfARunningJob: two pools on one file, as two
// daemons on one host, whose wall clock steps forward by an hour while one
// of them runs a job on a 30 s lease: the other, woken at once, takes
// back nothing, and the owner renews its lease by the clock as it stands;
// over two minutes after the step the job runs once, and still runs.
func TestForwardStepTakesNoLeaseOfARunningJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(t0)
	var starts, reclaimed atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var qs []*Client
	for _, owner := range []string{"A", "B"} {
		q, err := openSQLite(ctx, path, sqlite.Config{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() }) // after the pool stops: its cleanup runs first
		qs = append(qs, q)
		p := newTestPool(t, q, PoolConfig{Owner: owner, Lease: 30 * time.Second, MaintenanceEvery: -1,
			ReclaimedFunc: func(n int) { reclaimed.Add(int32(n)) }})
		p.Register("long", HandlerFunc(func(ctx context.Context, j *Job) error {
			starts.Add(1)
			<-release
			return nil
		}), TypeConfig{})
		p.Register("quick", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
		runPool(t, p)
	}
	mustEnqueue(t, qs[0], NewJob{Type: "long", Key: "long"})
	eventually(t, "the long job running", func() bool { return starts.Load() == 1 })
	owner := mustJob(t, qs[0], "long").Owner

	clk.Step(time.Hour)
	// Wake both pools: each makes a transaction, which would take back a lease
	// that looks expired.
	mustEnqueue(t, qs[0], NewJob{Type: "quick", Key: "quick-a"})
	mustEnqueue(t, qs[1], NewJob{Type: "quick", Key: "quick-b"})
	eventually(t, "the quick jobs done", func() bool {
		return mustJob(t, qs[0], "quick-a").State == StateDone && mustJob(t, qs[0], "quick-b").State == StateDone
	})
	end := clk.Now().Add(2 * time.Minute)
	advanceUntil(t, clk, time.Second, "two minutes after the step", func() bool { return !clk.Now().Before(end) })
	eventually(t, "the lease renewed by the clock as it stands", func() bool {
		return mustJob(t, qs[0], "long").LeaseUntil.After(clk.Now())
	})
	if n := reclaimed.Load(); n != 0 {
		t.Errorf("%d leases taken back after a forward step", n)
	}
	if n := starts.Load(); n != 1 {
		t.Errorf("the long job started %d times, want once", n)
	}
	if j := mustJob(t, qs[0], "long"); j.State != StateRunning || j.Owner != owner || j.Attempt != 1 {
		t.Errorf("the long job: %s under %s at attempt %d, want running under %s at attempt 1", j.State, j.Owner, j.Attempt, owner)
	}
	once.Do(func() { close(release) })
	eventually(t, "the long job done", func() bool { return mustJob(t, qs[0], "long").State == StateDone })
}
