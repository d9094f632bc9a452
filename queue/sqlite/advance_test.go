package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestAdvanceBatchCommitsWinnersOnly: in one batch, schedules whose
// cursor moved (another beat won), that were paused since they were read,
// or whose cursor another beat created first, write nothing, while the
// others, before and after them and in the same statements, commit their
// jobs, skips and cursors.
func TestAdvanceBatchCommitsWinnersOnly(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	i1, i2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	const n = 250 // more than one moveCursorsSQL statement
	name := func(i int) string { return fmt.Sprintf("s%03d", i) }
	for i := range n {
		if _, err := q.Advance(ctx, Advance{Schedule: name(i), To: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Advance(ctx, Advance{Schedule: "taken", To: t0}); err != nil {
		t.Fatal(err)
	}
	const moved, paused = 7, 130
	if _, err := q.Advance(ctx, Advance{Schedule: name(moved), From: t0, To: i1}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetPaused(ctx, name(paused), true); err != nil {
		t.Fatal(err)
	}
	jobs := func(s string, at time.Time) []NewJob {
		return []NewJob{
			{Type: "t", Key: s + "|a|" + at.Format(time.RFC3339), Schedule: s, Item: "a", ScheduledAt: at},
			{Type: "t", Key: s + "|b|" + at.Format(time.RFC3339), Schedule: s, Item: "b", ScheduledAt: at},
		}
	}
	var advs []Advance
	for i := range n {
		s := name(i)
		advs = append(advs, Advance{Schedule: s, From: t0, To: i2, Jobs: jobs(s, i2),
			Skips: []Skip{{Schedule: s, ScheduledAt: i1, Reason: SkipMisfire}}})
	}
	advs = append(advs,
		Advance{Schedule: "fresh", To: i2, Jobs: jobs("fresh", i2)},
		Advance{Schedule: "taken", To: i2, Jobs: jobs("taken", i2)})
	res, err := q.AdvanceBatch(ctx, advs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(advs) {
		t.Fatalf("%d results for %d advances", len(res), len(advs))
	}
	lost := map[string]bool{name(moved): true, name(paused): true, "taken": true}
	cursors, err := q.Cursors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range advs {
		r := res[i]
		if lost[a.Schedule] {
			if !errors.Is(r.Err, ErrCursorMoved) || r.Jobs != nil {
				t.Errorf("%s: result %+v, want ErrCursorMoved and no jobs", a.Schedule, r)
			}
			for _, j := range a.Jobs {
				if _, err := jobByRef(ctx, q, j.Key); !errors.Is(err, ErrNotFound) {
					t.Errorf("%s lost its compare-and-set but its job %s landed (%v)", a.Schedule, j.Key, err)
				}
			}
			if got := cursors[a.Schedule].At; got.Equal(i2) {
				t.Errorf("%s lost its compare-and-set but its cursor moved to %v", a.Schedule, got)
			}
			if skips, _ := q.Skips(ctx, a.Schedule, 10); len(skips) != 0 {
				t.Errorf("%s lost its compare-and-set but its skips landed: %+v", a.Schedule, skips)
			}
			continue
		}
		if r.Err != nil || len(r.Jobs) != len(a.Jobs) {
			t.Errorf("%s: result %+v, want committed", a.Schedule, r)
			continue
		}
		for k, j := range a.Jobs {
			if !r.Jobs[k].Inserted || r.Jobs[k].Key != j.Key {
				t.Errorf("%s: job result %+v, want %s inserted", a.Schedule, r.Jobs[k], j.Key)
			}
			if got := mustJob(t, q, j.Key).ID; got != r.Jobs[k].ID {
				t.Errorf("%s: job %s has id %d, result says %d", a.Schedule, j.Key, got, r.Jobs[k].ID)
			}
		}
		if got := cursors[a.Schedule].At; !got.Equal(i2) {
			t.Errorf("%s: cursor %v, want %v", a.Schedule, got, i2)
		}
		if len(a.Skips) > 0 {
			if skips, _ := q.Skips(ctx, a.Schedule, 10); len(skips) != 1 {
				t.Errorf("%s: skips %+v, want one", a.Schedule, skips)
			}
		}
	}
	if c := cursors[name(moved)]; !c.At.Equal(i1) {
		t.Errorf("cursor moved by the other beat = %v, want %v", c.At, i1)
	}
	if c := cursors[name(paused)]; !c.Paused || !c.At.Equal(t0) {
		t.Errorf("paused cursor = %+v, want paused at %v", c, t0)
	}
}

// TestAdvanceBatchFailedTransaction: a batch too large for one transaction
// whose second transaction fails keeps the first one's Advances, and writes
// nothing of the failed one's nor of those after it, each of which reports
// the failure.
func TestAdvanceBatchFailedTransaction(t *testing.T) {
	boom := errors.New("boom")
	testHookInsert = func(j NewJob) error {
		if j.Key == "bad" {
			return boom
		}
		return nil
	}
	defer func() { testHookInsert = nil }()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	var advs []Advance
	for i := range 5 { // 2,001 rows each: transactions of [0 1] [2 3] [4]
		s := fmt.Sprintf("s%d", i)
		a := Advance{Schedule: s, To: t0}
		for k := range 2000 {
			a.Jobs = append(a.Jobs, NewJob{Type: "t", Key: fmt.Sprintf("%s|%d", s, k), Schedule: s})
		}
		advs = append(advs, a)
	}
	advs[3].Jobs[1999] = NewJob{Type: "t", Key: "bad", Schedule: "s3", SkipIfActive: true}
	res, err := q.AdvanceBatch(ctx, advs)
	if err != nil {
		t.Fatal(err)
	}
	cursors, _ := q.Cursors(ctx)
	for i, r := range res {
		s := advs[i].Schedule
		_, cur := cursors[s]
		_, jobErr := jobByRef(ctx, q, s+"|0")
		if i < 2 {
			if r.Err != nil || !cur || jobErr != nil {
				t.Errorf("%s: err %v, cursor %t, job %v: want committed", s, r.Err, cur, jobErr)
			}
			continue
		}
		if !errors.Is(r.Err, boom) || cur || !errors.Is(jobErr, ErrNotFound) {
			t.Errorf("%s: err %v, cursor %t, job %v: want boom and nothing written", s, r.Err, cur, jobErr)
		}
	}
}
