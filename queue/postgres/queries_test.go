package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler/clock"
	"scheduler/queue/postgres"
	"scheduler/queue/postgres/pgtest"
	"scheduler/queue/store"
)

func TestAdvancePauseAndSkips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clock.NewFake(t0)
	s := open(t, pgtest.DSN(t), c)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	job := func(m int) store.NewJob {
		return store.NewJob{Key: "s|" + at(m).Format(time.RFC3339), Type: "t", Schedule: "s", ScheduledAt: at(m), SkipIfActive: true}
	}
	if _, err := s.Advance(ctx, store.Advance{Schedule: "s", To: at(1), Jobs: []store.NewJob{job(1)}}); err != nil {
		t.Fatal(err)
	}
	// The job of minute 1 is pending: minute 2's overlaps it.
	res, err := s.Advance(ctx, store.Advance{Schedule: "s", From: at(1), To: at(2), Jobs: []store.NewJob{job(2)},
		Skips: []store.Skip{{Schedule: "s", ScheduledAt: at(0), Reason: store.SkipMisfire}}})
	if err != nil || !res[0].Skipped {
		t.Fatalf("Advance = %+v, %v; want skipped", res, err)
	}
	if err := s.SetPaused(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	_, err = s.Advance(ctx, store.Advance{Schedule: "s", From: at(2), To: at(3)})
	if !errors.Is(err, store.ErrCursorMoved) {
		t.Fatalf("Advance of a paused schedule read running: %v", err)
	}
	r, err := s.AdvanceBatch(ctx, []store.Advance{
		{Schedule: "s", From: at(2), To: at(3), Paused: true, Resume: true},
		{Schedule: "new", To: at(3)},
		{Schedule: "bad", From: at(3), To: at(2)},
	})
	if err != nil || r[0].Err != nil || r[1].Err != nil || r[2].Err == nil {
		t.Fatalf("AdvanceBatch = %+v, %v", r, err)
	}
	cs, err := s.Cursors(ctx)
	if err != nil || cs["s"].Paused || !cs["s"].At.Equal(at(3)) || !cs["new"].At.Equal(at(3)) {
		t.Fatalf("Cursors = %+v, %v", cs, err)
	}
	r, err = s.AdvanceBatch(ctx, []store.Advance{{Schedule: "s", From: at(2), To: at(4)}, {Schedule: "new", From: at(3), To: at(4)}})
	if err != nil || !errors.Is(r[0].Err, store.ErrCursorMoved) || r[1].Err != nil {
		t.Fatalf("AdvanceBatch = %+v, %v", r, err)
	}
	sk, err := s.SkipAt(ctx, "s", "", at(2))
	if err != nil || sk.Reason != store.SkipOverlap {
		t.Fatalf("SkipAt = %+v, %v", sk, err)
	}
	if _, err := s.SkipAt(ctx, "s", "", at(5)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SkipAt of no skip: %v", err)
	}
	sum, err := s.SkipSummary(ctx, "s", at(-1))
	if err != nil || sum.Count != 2 || sum.Last == nil || !sum.Last.ScheduledAt.Equal(at(2)) {
		t.Fatalf("SkipSummary = %+v, %v", sum, err)
	}
	ls, err := s.ListSkips(ctx, "", 10)
	if err != nil || len(ls) != 2 || !ls[0].ScheduledAt.Equal(at(2)) {
		t.Fatalf("ListSkips = %+v, %v", ls, err)
	}
}

func TestListsAndRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clock.NewFake(t0)
	s := open(t, pgtest.DSN(t), c)
	jobs := []store.NewJob{
		{Key: "a|x|1", Type: "t1", Schedule: "a", Item: "x", ScheduledAt: t0},
		{Key: "a|x|2", Type: "t1", Schedule: "a", Item: "x", ScheduledAt: t0.Add(time.Hour)},
		{Key: "a|x|manual|k", Type: "t2", Schedule: "a", Item: "x"},
		{Key: "a|y|manual|k", Type: "t2", Schedule: "a", Item: "y"},
		{Key: "b|manual|k", Type: "t2", Schedule: "b"},
		{Key: "z%_", Type: "t3"},
	}
	res, err := s.EnqueueBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(res); i++ {
		if res[i].ID <= res[i-1].ID {
			t.Fatalf("ids %+v: want them in the order of the jobs", res)
		}
	}
	last, err := s.LastRuns(ctx)
	if err != nil || last["a"].Key != "a|x|2" || last["b"].Key != "b|manual|k" || len(last) != 2 {
		t.Fatalf("LastRuns = %+v, %v", last, err)
	}
	man, err := s.LastManualRuns(ctx)
	if err != nil || man["a"].Key != "a|y|manual|k" {
		t.Fatalf("LastManualRuns = %+v, %v", man, err)
	}
	sj, err := s.ScheduleJobs(ctx, "a", 10)
	if err != nil || len(sj) != 4 || sj[0].Key != "a|x|2" || sj[3].Key != "a|x|manual|k" {
		t.Fatalf("ScheduleJobs = %v, %v", keys(sj), err)
	}
	o, err := s.Run(ctx, "a", res[3].ID, 2, "|manual|k")
	if err != nil || o.Jobs != 2 || o.States[store.StatePending] != 2 {
		t.Fatalf("Run = %+v, %v", o, err)
	}
	for _, tc := range []struct {
		f    store.Filter
		want []string
	}{
		{store.Filter{KeyPrefix: "a|x|"}, []string{"a|x|manual|k", "a|x|2", "a|x|1"}},
		{store.Filter{KeyPrefix: "z%"}, []string{"z%_"}},
		{store.Filter{Type: "t2", Schedule: "a"}, []string{"a|y|manual|k", "a|x|manual|k"}},
		{store.Filter{State: store.StatePending, Type: "t1", Limit: 1}, []string{"a|x|2"}},
		{store.Filter{State: store.StateDone}, nil},
	} {
		js, err := s.List(ctx, tc.f)
		if err != nil || !equal(keys(js), tc.want) {
			t.Errorf("List(%+v) = %v, %v; want %v", tc.f, keys(js), err, tc.want)
		}
	}
	if _, err := s.List(ctx, store.Filter{State: "nope"}); err == nil {
		t.Error("List of an unknown state: no error")
	}
	if _, err := s.List(ctx, store.Filter{Limit: store.MaxList + 1}); err == nil {
		t.Error("List over MaxList: no error")
	}
}

func keys(js []*store.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.Key)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPoolsConfigAndWake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clock.NewFake(t0)
	s := open(t, pgtest.DSN(t), c)
	if _, err := s.LastConfig(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LastConfig of none: %v", err)
	}
	saved, err := s.SaveConfig(ctx, "/etc/s.toml", []byte("x = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.LastConfig(ctx)
	if err != nil || string(got.Data) != "x = 1\n" || got.SHA256 != saved.SHA256 || !got.LoadedAt.Equal(t0) {
		t.Fatalf("LastConfig = %+v, %v", got, err)
	}
	if _, err := s.EnqueueBatch(ctx, []store.NewJob{{Type: "known"}, {Type: "orphan"}, {Type: "known", RunAt: t0.Add(time.Hour), Priority: 5}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Trip(ctx, store.Trip{Owner: "p1", Now: t0, Presence: &store.Presence{Types: []string{"known"}, Process: store.Process{PID: 7, Host: "h", Version: "v"}, First: true}})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	h, err := s.Handlers(ctx)
	if err != nil || !h.Known || h.Pools != 1 || len(h.Waiting) != 1 || h.Waiting[0].Type != "orphan" || h.Waiting[0].Oldest != time.Minute {
		t.Fatalf("Handlers = %+v, %v", h, err)
	}
	ds, err := s.Daemons(ctx)
	if err != nil || len(ds) != 1 || ds[0].PID != 7 || !ds[0].LastSeen.Equal(t0) {
		t.Fatalf("Daemons = %+v, %v", ds, err)
	}
	if err := s.Absent(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.Daemons(ctx); len(ds) != 0 {
		t.Fatalf("Daemons after Absent = %+v", ds)
	}
	ready, lease, err := s.NextWake(ctx, "me", []string{"known"})
	if err != nil || !ready.Equal(t0) || !lease.IsZero() {
		t.Fatalf("NextWake = %v %v %v", ready, lease, err)
	}
	if res, err := s.Trip(ctx, store.Trip{Owner: "other", Now: c.Now(), Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"known"}}}); err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	ready, lease, err = s.NextWake(ctx, "me", []string{"known"})
	if err != nil || !ready.Equal(t0.Add(time.Hour)) || !lease.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("NextWake = %v %v %v", ready, lease, err)
	}
}

func TestName(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable": "postgres://u@h:5432/db?sslmode=disable",
		"host=h user=u password=secret dbname=db":       "host=h user=u dbname=db",
		"host=h password='se cret' dbname=db":           "host=h dbname=db",
	} {
		if got := postgres.Redact(dsn); got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
	}
}
