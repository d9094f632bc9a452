package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Outboxer is what an engine's test hooks add to its store for the test of
// enqueues in the caller's own transaction: Outbox writes note to a table
// of the caller's own and enqueues jobs with the engine's EnqueueTx, in
// one transaction of the caller's on the store's database, which it
// commits when commit is set and rolls back otherwise; Notes reads the
// notes committed.
type Outboxer interface {
	Outbox(ctx context.Context, note string, jobs []store.NewJob, commit bool) ([]store.Enqueued, error)
	Notes(ctx context.Context) ([]string, error)
}

// testEnqueueInCallersTx: the jobs enqueued in a transaction of the
// caller's commit or roll back with the caller's own writes; committed,
// they are counted, deduplicated by key as any enqueue, claimed as any
// job, and the watch of another store on the database hears of them. The
// stores keep real time: an engine may stamp the jobs with its database's
// clock, and look again, on its clock, until a commit it was told of
// shows.
func testEnqueueInCallersTx(t *testing.T, su *suite) {
	t.Parallel()
	a, same := su.openFunc(t, clock.Real{})
	b := same(clock.Real{})
	ob, ok := a.(Outboxer)
	if !ok {
		t.Fatalf("%T has no Outbox (see Outboxer): the engine's tests must add it", a)
	}
	ctx := context.Background()
	if _, err := ob.Outbox(ctx, "rolled back", []store.NewJob{{Type: "t", Key: "o1"}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := jobByRef(ctx, a, "o1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job of a rolled back transaction: %v", err)
	}
	if notes, err := ob.Notes(ctx); err != nil || len(notes) != 0 {
		t.Fatalf("notes after a rollback = %v, %v; want none", notes, err)
	}
	checkCounts(t, a, "rolled back")

	changed := watch(t, b)
	res, err := ob.Outbox(ctx, "committed", []store.NewJob{{Type: "t", Key: "o1"}, {Type: "t", Key: "o1"}, {Type: "u", Key: "o2"}}, true)
	if err != nil || len(res) != 3 || !res[0].Inserted || res[1].Inserted || res[1].ID != res[0].ID || !res[2].Inserted {
		t.Fatalf("Outbox = %+v, %v; want o1 inserted once, o2 inserted", res, err)
	}
	if notes, err := ob.Notes(ctx); err != nil || !slices.Equal(notes, []string{"committed"}) {
		t.Fatalf("notes after the commit = %v, %v", notes, err)
	}
	if j := mustJob(t, a, "o1"); j.ID != res[0].ID || j.State != store.StatePending {
		t.Errorf("o1 = %+v, want pending with id %d", j, res[0].ID)
	}
	checkCounts(t, a, "committed")
	waitFor(t, changed)
	if js := claim(t, b, "B", b.Clock().Now().Add(time.Minute), time.Minute, 10, "t", "u"); len(js) != 2 {
		t.Errorf("claimed %d jobs, want o1 and o2", len(js))
	}
	checkCounts(t, a, "claimed")
}
