package queue

import (
	"context"
	"testing"
)

func TestPoolRunsEnqueuedJob(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p, err := NewPool(q, PoolConfig{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan int64, 1)
	p.Register("noop", HandlerFunc(func(ctx context.Context, j *Job) error { ran <- j.ID; return nil }), TypeConfig{})
	runPool(t, p)
	res := mustEnqueue(t, q, NewJob{Type: "noop", Key: "a"})
	if got := waitFor(t, ran); got != res.ID {
		t.Fatalf("ran %d, want %d", got, res.ID)
	}
	eventually(t, "job done", func() bool { return mustJob(t, q, "a").State == StateDone })
}
