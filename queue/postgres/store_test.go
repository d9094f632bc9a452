package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler/clock"
	"scheduler/queue"
	"scheduler/queue/postgres"
	"scheduler/queue/postgres/pgtest"
	"scheduler/queue/store"
)

var _ queue.Store = (*postgres.Store)(nil)

var t0 = time.Date(2026, 3, 8, 6, 0, 0, 0, time.UTC)

// open opens a store on dsn with the fake clock c, closed at the end of t.
func open(t *testing.T, dsn string, c clock.Clock) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Config{Clock: c, LocalClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestEnqueueDedupAndPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clock.NewFake(t0)
	s := open(t, pgtest.DSN(t), c)
	e, err := s.Enqueue(ctx, store.NewJob{Key: "k1", Type: "t", Payload: []byte(`{"a": 1}`)})
	if err != nil || !e.Inserted || e.ID == 0 {
		t.Fatalf("Enqueue = %+v, %v", e, err)
	}
	again, err := s.Enqueue(ctx, store.NewJob{Key: "k1", Type: "t"})
	if err != nil || again.Inserted || again.ID != e.ID {
		t.Fatalf("Enqueue again = %+v, %v; want id %d not inserted", again, err, e.ID)
	}
	j, err := s.Job(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(j.Payload) != `{"a": 1}` || j.State != store.StatePending || !j.RunAt.Equal(t0) || !j.CreatedAt.Equal(t0) {
		t.Fatalf("job = %+v", j)
	}
	// Run it to done, then purge it: its key stays used.
	res, err := s.Trip(ctx, store.Trip{Owner: "o", Now: t0, Claim: &store.Claim{Lease: time.Minute, N: 10, Types: []string{"t"}}})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	cj := res.Claimed[0]
	if cj.Owner != "o" || cj.Attempt != 1 || !cj.LeaseUntil.Equal(t0.Add(time.Minute)) {
		t.Fatalf("claimed %+v", cj)
	}
	res, err = s.Trip(ctx, store.Trip{Owner: "o", Now: t0, Results: []store.Result{{Job: cj, Worker: "w1", Outcome: store.OutcomeDone, Started: t0, Finished: t0.Add(time.Second)}}})
	if err != nil || len(res.Fenced) != 1 || !res.Fenced[0] {
		t.Fatalf("finish = %+v, %v", res, err)
	}
	as, err := s.Attempts(ctx, e.ID)
	if err != nil || len(as) != 1 || as[0].Outcome != store.OutcomeDone || as[0].Worker != "w1" {
		t.Fatalf("Attempts = %+v, %v", as, err)
	}
	c.Advance(time.Hour)
	jobs, _, err := s.Purge(ctx, c.Now())
	if err != nil || jobs != 1 {
		t.Fatalf("Purge = %d, %v", jobs, err)
	}
	if _, err := s.Job(ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("purged job: %v", err)
	}
	p, err := s.Enqueue(ctx, store.NewJob{Key: "k1", Type: "t"})
	if err != nil || !p.Purged || p.Inserted || p.ID != 0 {
		t.Fatalf("Enqueue of a purged key = %+v, %v", p, err)
	}
	b, err := s.EnqueueBatch(ctx, []store.NewJob{{Key: "k1", Type: "t"}, {Key: "k2", Type: "t"}, {Key: "k2", Type: "t"}})
	if err != nil || !b[0].Purged || !b[1].Inserted || b[2].Inserted || b[2].ID != b[1].ID {
		t.Fatalf("EnqueueBatch = %+v, %v", b, err)
	}
}
