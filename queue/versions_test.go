package queue

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// TestPoolRunsOnlyAcceptedVersions: a producer that moved to version 2 of
// a type enqueues a job that a pool accepting version 1 alone does not
// take: it runs the job of version 1 enqueued after it, leaves the other
// pending with no attempt spent, and does not wake for it again and
// again as it would for a job it could take; a pool that accepts both
// versions runs it.
func TestPoolRunsOnlyAcceptedVersions(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueueConfig(t, sqlite.Config{NoFileWatch: true})
	ctx := context.Background()
	// First in the claim order: a pool that took it would run it first.
	mustEnqueue(t, q, NewJob{Type: "t", Key: "v2", Version: 2, Priority: 1})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "v1"})

	ran := make(chan *Job, 2)
	run := HandlerFunc(func(ctx context.Context, j *Job) error { ran <- j; return nil })
	old := newTestPool(t, q, PoolConfig{Workers: 1, MaintenanceEvery: -1, WatchInterval: time.Hour})
	if err := old.Register("t", run, TypeConfig{}); err != nil {
		t.Fatal(err)
	}
	stop := runPool(t, old)
	if j := waitFor(t, ran); j.Key != "v1" || j.Version != 1 {
		t.Fatalf("the pool accepting version 1 ran %s of version %d, want v1 of version 1", j.Key, j.Version)
	}
	eventually(t, "v1 done", func() bool { return mustJob(t, q, "v1").State == StateDone })
	if j := mustJob(t, q, "v2"); j.State != StatePending || j.Attempt != 0 {
		t.Errorf("v2: %s at attempt %d, want pending at attempt 0", j.State, j.Attempt)
	}
	// Parked: the loop's, the watch's, the checkpointer's and the
	// maintenance's timers. A pool that counted v2 as ready to take would
	// look again at every blockedRecheck.
	clk.BlockUntil(4)
	before := old.rounds.Load()
	for range 10 {
		clk.Advance(blockedRecheck)
		clk.BlockUntil(4)
	}
	if n := old.rounds.Load() - before; n > 3 {
		t.Errorf("loop ran %d times in 10 rechecks with only a job of a version it does not accept ready", n)
	}
	h, err := q.Unhandled(ctx)
	if err != nil || len(h.Waiting) != 1 || h.Waiting[0].Type != "t" || h.Waiting[0].Version != 2 || h.Waiting[0].Ready != 1 {
		t.Errorf("Handlers = %+v, %v; want t's job of version 2 waiting", h, err)
	}
	stop()

	both := newTestPool(t, q, PoolConfig{Workers: 1, MaintenanceEvery: -1, WatchInterval: time.Hour})
	if err := both.Register("t", run, TypeConfig{Accepts: []int{2, 1}}); err != nil {
		t.Fatal(err)
	}
	runPool(t, both)
	if j := waitFor(t, ran); j.Key != "v2" || j.Version != 2 || j.Attempt != 1 {
		t.Fatalf("the pool accepting versions 1 and 2 ran %s of version %d at attempt %d, want v2 of version 2 at attempt 1", j.Key, j.Version, j.Attempt)
	}
	eventually(t, "v2 done", func() bool { return mustJob(t, q, "v2").State == StateDone })
}

// TestRegisterChecksAccepts: accepted versions are at least 1 and
// distinct.
func TestRegisterChecksAccepts(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{})
	h := HandlerFunc(func(ctx context.Context, j *Job) error { return nil })
	for _, tc := range []struct {
		accepts []int
		want    string
	}{
		{[]int{0}, "register t: accepted version 0 is not at least 1"},
		{[]int{2, 1, 2}, "register t: version 2 accepted twice"},
	} {
		if err := p.Register("t", h, TypeConfig{Accepts: tc.accepts}); err == nil || err.Error() != tc.want {
			t.Errorf("Register with Accepts %v = %v, want %q", tc.accepts, err, tc.want)
		}
	}
	if err := p.Register("t", h, TypeConfig{Accepts: []int{3, 1}}); err != nil {
		t.Errorf("Register with Accepts [3 1] = %v", err)
	}
}
