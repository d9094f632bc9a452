package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// watch runs q.Watch until the test ends and returns its channel once it
// watches. Changes must be told by notices: the look under them is an
// hour apart. An engine that cannot tell changes (where the platform has
// no notices) polls every 50 ms instead, as the contract allows.
func watch(t *testing.T, q store.Engine) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 1)
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Watch(ctx, store.WatchConfig{Poll: 50 * time.Millisecond, Safety: time.Hour}, changed, func() { close(started) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, started)
	return changed
}

// testWatchSeesOtherStores: a watch on one store is woken by an enqueue, a
// cancel request on a running job and an advance that inserts jobs,
// committed by another store on the same database. The stores keep real
// time: an engine may look again, on its clock, until a commit it was told
// of shows.
func testWatchSeesOtherStores(t *testing.T, su *suite) {
	t.Parallel()
	a, same := su.openFunc(t, clock.Real{})
	b := same(clock.Real{})
	ctx := context.Background()
	// A job running under A, for the cancel request below, claimed before
	// B watches.
	running := mustEnqueue(t, a, store.NewJob{Type: "t", Key: "running"})
	if js := claim(t, a, "A", a.Clock().Now(), time.Hour, 1, "t"); len(js) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(js))
	}
	changed := watch(t, b)
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"Enqueue", func() error { _, err := a.Enqueue(ctx, store.NewJob{Type: "t", Key: "new"}); return err }},
		{"RequestCancel", func() error { _, err := a.RequestCancel(ctx, running.ID, "alice"); return err }},
		{"AdvanceBatch", func() error {
			now := a.Clock().Now()
			res, err := a.AdvanceBatch(ctx, []store.Advance{{Schedule: "s", To: now,
				Jobs: []store.NewJob{{Type: "t", Key: "s||1", Schedule: "s", ScheduledAt: now}}}})
			if err == nil {
				err = res[0].Err
			}
			return err
		}},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		select {
		case <-changed:
		case <-time.After(failAfter):
			t.Fatalf("the watch was not woken by another store's %s", step.what)
		}
	}
}

// testWatchSeesOwnCancelRequests: a watch on a store is woken by that
// store's own cancel request on a running job, which a pool of the same
// process may hold (a dashboard's cancel runs in the daemon), though it
// passes over the store's other commits.
func testWatchSeesOwnCancelRequests(t *testing.T, su *suite) {
	t.Parallel()
	s, clk := su.open(t)
	ctx := context.Background()
	running := mustEnqueue(t, s, store.NewJob{Type: "t", Key: "running"})
	if js := claim(t, s, "A", clk.Now(), time.Hour, 1, "t"); len(js) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(js))
	}
	changed := watch(t, s)
	select { // a wake-up of the set-up
	case <-changed:
	default:
	}
	if _, err := s.RequestCancel(ctx, running.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(failAfter):
		t.Fatal("the watch was not woken by its own store's cancel request")
	}
}

// testSubscribeSeesOwnCommits: a subscription to a store is woken by that
// store's commits that make a job ready: an enqueue, a batch, an advance
// and a batch of advances that insert jobs, a retry of a dead job or of
// all, a reclaim of an expired lease.
func testSubscribeSeesOwnCommits(t *testing.T, su *suite) {
	t.Parallel()
	s, clk := su.open(t)
	ctx := context.Background()
	sub, unsub := s.Subscribe()
	defer unsub()
	mustEnqueue(t, s, store.NewJob{Type: "d", Key: "dead1", MaxAttempts: 1})
	finishJob(t, s, clk.Now(), "dead1", store.OutcomeDead, "boom")
	mustEnqueue(t, s, store.NewJob{Type: "e", Key: "dead2", MaxAttempts: 1})
	finishJob(t, s, clk.Now(), "dead2", store.OutcomeDead, "boom")
	mustEnqueue(t, s, store.NewJob{Type: "g", Key: "gone"})
	claim(t, s, "gone", clk.Now(), time.Minute, 1, "g")
	for _, step := range []struct {
		what string
		do   func() error
	}{
		{"Enqueue", func() error { _, err := s.Enqueue(ctx, store.NewJob{Type: "t", Key: "one"}); return err }},
		{"EnqueueBatch", func() error {
			_, err := s.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: "two"}, {Type: "t", Key: "three"}})
			return err
		}},
		{"Advance", func() error {
			_, err := s.Advance(ctx, store.Advance{Schedule: "a", To: t0, Jobs: []store.NewJob{{Type: "t", Key: "a||1", Schedule: "a", ScheduledAt: t0}}})
			return err
		}},
		{"AdvanceBatch", func() error {
			res, err := s.AdvanceBatch(ctx, []store.Advance{{Schedule: "b", To: t0, Jobs: []store.NewJob{{Type: "t", Key: "b||1", Schedule: "b", ScheduledAt: t0}}}})
			if err == nil {
				err = res[0].Err
			}
			return err
		}},
		{"Retry", func() error { return s.Retry(ctx, mustJob(t, s, "dead1").ID) }},
		{"RetryAllDead", func() error { _, err := s.RetryAllDead(ctx); return err }},
		{"Reclaim", func() error {
			clk.Advance(2 * time.Minute)
			_, err := reclaim(ctx, s)
			return err
		}},
	} {
		select { // a wake-up of the set-up or the step before
		case <-sub:
		default:
		}
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		select {
		case <-sub:
		case <-time.After(failAfter):
			t.Fatalf("the subscription was not woken by the store's own %s", step.what)
		}
	}
}

// testWatchStartsEvenIfCancelled: a Watch whose ctx is done before it could
// watch still calls started, once, and returns: a pool stopped as it
// starts waits for started before anything else.
func testWatchStartsEvenIfCancelled(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Watch(ctx, store.WatchConfig{Poll: time.Hour, Safety: time.Hour}, make(chan struct{}, 1), func() { calls++ })
	}()
	waitFor(t, done)
	if calls != 1 {
		t.Errorf("started called %d times by a Watch whose ctx was done, want 1", calls)
	}
}
