package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

func testEnqueueIsIdempotentOnKey(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "before"})
	first := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "nightly|acme|2026-03-01T03:00:00Z"})
	second := mustEnqueue(t, q, store.NewJob{Type: "other", Key: "nightly|acme|2026-03-01T03:00:00Z"})
	if !first.Inserted || second.Inserted {
		t.Errorf("Inserted = %v, %v; want true, false", first.Inserted, second.Inserted)
	}
	if second.ID != first.ID || first.ID == 0 {
		t.Errorf("second enqueue returned id %d, want the existing %d", second.ID, first.ID)
	}
	if j := mustJob(t, q, first.Key); j.Type != "t" || j.ID != first.ID {
		t.Errorf("job %d of type %q: the second enqueue changed the job", j.ID, j.Type)
	}
}

func testEnqueueBatchIsAllOrNothing(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	_, err := q.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: "a"}, {Type: "t", Key: "b", Payload: json.RawMessage(`{bad`)}})
	if err == nil {
		t.Fatal("batch with an invalid payload succeeded")
	}
	_, err = q.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: "a"}, {Type: "", Key: "b"}})
	if err == nil {
		t.Fatal("batch with an empty type succeeded")
	}
	s, _ := q.Stats(ctx)
	if s.Total[store.StatePending] != 0 {
		t.Fatalf("%d jobs left by failed batches, want 0", s.Total[store.StatePending])
	}
	res, err := q.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: "a"}, {Type: "t", Key: "b"}, {Type: "t", Key: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Inserted || !res[1].Inserted || res[2].Inserted || res[2].ID != res[0].ID {
		t.Errorf("results = %+v", res)
	}
}

// testEnqueueBatchLargeKeepsPerJobResults: a batch big enough for the
// multi-row path reports, per job and in order, its id and whether it was
// inserted, with keys repeated inside the batch and keys that existed.
func testEnqueueBatchLargeKeepsPerJobResults(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	old := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k150"})
	var jobs []store.NewJob
	for i := range 250 {
		jobs = append(jobs, store.NewJob{Type: "t", Key: fmt.Sprint("k", i%220)})
	}
	res, err := q.EnqueueBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for i, r := range res {
		key := jobs[i].Key
		wantInserted := i < 220 && key != "k150"
		if r.Key != key || r.Inserted != wantInserted {
			t.Fatalf("result %d = %+v, want key %s inserted %v", i, r, key, wantInserted)
		}
		if prev, ok := ids[key]; ok && prev != r.ID {
			t.Fatalf("key %s has ids %d and %d", key, prev, r.ID)
		}
		ids[key] = r.ID
		if j := mustJob(t, q, key); j.ID != r.ID {
			t.Fatalf("result %d: id %d, stored %d", i, r.ID, j.ID)
		}
	}
	if ids["k150"] != old.ID {
		t.Errorf("existing key got id %d, want %d", ids["k150"], old.ID)
	}
	if s, _ := q.Stats(ctx); s.Total[store.StatePending] != 220 {
		t.Errorf("%d jobs stored, want 220", s.Total[store.StatePending])
	}
}

func testFakeClockIsUsedForTimestamps(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	clk.Advance(time.Hour)
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k"})
	if j := mustJob(t, q, "k"); !j.CreatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("CreatedAt = %v, want %v", j.CreatedAt, t0.Add(time.Hour))
	}
}

// testConcurrentEnqueuesAllLand enqueues from many goroutines at once, one
// job per call and fsynced, a few of them under one shared key: every call
// gets its own job, the shared key is inserted once, and every other call
// with it gets that job's id.
func testConcurrentEnqueuesAllLand(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	const goroutines, each = 16, 25
	var wg sync.WaitGroup
	results := make([][]store.Enqueued, goroutines)
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("g%d-%d", g, i)
				if i == 0 {
					key = "shared"
				}
				r, err := q.Enqueue(ctx, store.NewJob{Type: "t", Key: key})
				if err != nil {
					errs <- err
					return
				}
				results[g] = append(results[g], r)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ids := map[int64]string{}
	inserted, sharedID := 0, mustJob(t, q, "shared").ID
	for _, rs := range results {
		for _, r := range rs {
			if r.Key == "shared" {
				if r.ID != sharedID {
					t.Errorf("shared key: id %d, want %d", r.ID, sharedID)
				}
				if r.Inserted {
					inserted++
				}
				continue
			}
			if prev, dup := ids[r.ID]; dup || !r.Inserted {
				t.Errorf("key %s: id %d (also %q), inserted %t", r.Key, r.ID, prev, r.Inserted)
			}
			ids[r.ID] = r.Key
		}
	}
	if inserted != 1 {
		t.Errorf("shared key inserted %d times, want once", inserted)
	}
	s, _ := q.Stats(ctx)
	if want := goroutines*(each-1) + 1; s.Total[store.StatePending] != want {
		t.Errorf("%d pending jobs, want %d", s.Total[store.StatePending], want)
	}
}

// testEveryProducerProgresses runs producers that enqueue without pause:
// each must keep getting its calls back, through every hand-off of the turn
// to commit (and a caller may not keep the turn while calls keep coming).
func testEveryProducerProgresses(t *testing.T, su *suite) {
	t.Parallel()
	// Fsynced: while a group commits, the others are back with their next
	// call.
	q, _ := su.open(t)
	const producers = 8
	var calls [producers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := q.Enqueue(context.Background(), store.NewJob{Type: "t"}); err != nil {
					t.Error(err)
					return
				}
				calls[g].Add(1)
			}
		}()
	}
	eventually(t, "every producer has 20 calls back", func() bool {
		for g := range producers {
			if calls[g].Load() < 20 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
}

// testPayloadBoundsAtEveryEnqueue: Enqueue, EnqueueBatch, Advance,
// AdvanceBatch and an alarm's notifications refuse a payload nested deeper
// than store.MaxPayloadDepth or over store.MaxPayloadSize, and write
// nothing; a payload at the bounds is taken.
func testPayloadBoundsAtEveryEnqueue(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	nested := func(n int) json.RawMessage {
		return json.RawMessage(`{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`)
	}
	large := json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxPayloadSize) + `"}`)
	bad := []struct {
		payload json.RawMessage
		want    error
	}{
		{nested(store.MaxPayloadDepth + 1), store.ErrPayloadTooDeep},
		{nested(10000), store.ErrPayloadTooDeep},
		{large, store.ErrPayloadTooLarge},
		{json.RawMessage(`{"a":`), store.ErrPayloadNotJSON},
	}
	for i, b := range bad {
		key := fmt.Sprintf("bad-%d", i)
		job := store.NewJob{Type: "t", Key: key, Payload: b.payload}
		if _, err := q.Enqueue(ctx, job); !errors.Is(err, b.want) {
			t.Errorf("Enqueue of payload %d = %v, want %v", i, err, b.want)
		}
		if _, err := q.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: key + "-ok"}, job}); !errors.Is(err, b.want) {
			t.Errorf("EnqueueBatch of payload %d = %v, want %v", i, err, b.want)
		}
		sched := store.NewJob{Type: "t", Key: key + "-s", Schedule: key, ScheduledAt: t0, RunAt: t0, Payload: b.payload}
		if _, err := q.Advance(ctx, store.Advance{Schedule: key, To: t0, Jobs: []store.NewJob{sched}}); !errors.Is(err, b.want) {
			t.Errorf("Advance with payload %d = %v, want %v", i, err, b.want)
		}
		res, err := q.AdvanceBatch(ctx, []store.Advance{{Schedule: key, To: t0, Jobs: []store.NewJob{sched}}})
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, b.want) {
			t.Errorf("AdvanceBatch with payload %d = %+v, %v; want %v", i, res, err, b.want)
		}
		a := missedAlarm(key, "", t0, 0, "page")
		a.Notify[0].Payload = b.payload
		if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{a}}); !errors.Is(err, b.want) {
			t.Errorf("RaiseAlarms with notification payload %d = %v, want %v", i, err, b.want)
		}
		a = missedAlarm(key, "", t0, 0)
		a.Detail = b.payload
		if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{a}}); !errors.Is(err, b.want) {
			t.Errorf("RaiseAlarms with detail %d = %v, want %v", i, err, b.want)
		}
	}
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Total[store.StatePending] != 0 {
		t.Errorf("%d jobs left by refused enqueues, want 0", st.Total[store.StatePending])
	}
	atBound := json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxPayloadSize-len(`{"a":""}`)) + `"}`)
	for _, p := range []json.RawMessage{nested(store.MaxPayloadDepth), atBound} {
		mustEnqueue(t, q, store.NewJob{Type: "t", Payload: p})
	}
}
