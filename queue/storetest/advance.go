package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

func testAdvanceMovesCursorWithRowsAtomically(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	i1 := t0.Add(time.Minute)
	jobs := []store.NewJob{{Type: "t", Key: "s||1", Schedule: "s", ScheduledAt: i1, RunAt: i1}}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", To: t0}); err != nil {
		t.Fatalf("create cursor: %v", err)
	}
	// A second creator loses.
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", To: t0}); !errors.Is(err, store.ErrCursorMoved) {
		t.Fatalf("second create = %v, want store.ErrCursorMoved", err)
	}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: t0, To: i1, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	// A beat that read the old cursor writes nothing.
	stale := []store.NewJob{{Type: "t", Key: "s||other", Schedule: "s", ScheduledAt: i1}}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: t0, To: i1, Jobs: stale}); !errors.Is(err, store.ErrCursorMoved) {
		t.Fatalf("stale advance = %v, want store.ErrCursorMoved", err)
	}
	if _, err := jobByRef(ctx, q, "s||other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("stale advance inserted its job: %v", err)
	}
	// Backwards is refused.
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: i1, To: t0}); err == nil {
		t.Error("cursor moved backwards")
	}
	// A failing row rolls the cursor back too.
	bad := []store.NewJob{{Type: "", Key: "x"}}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: i1, To: i1.Add(time.Minute), Jobs: bad}); err == nil {
		t.Error("advance with a bad job succeeded")
	}
	cs, err := q.Cursors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs["s"].At; !got.Equal(i1) {
		t.Errorf("cursor = %v, want %v", got, i1)
	}
}

func testAdvanceSkipIfActiveRecordsOverlap(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	i1, i2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	mk := func(at time.Time, item string) store.NewJob {
		return store.NewJob{Type: "t", Key: "s|" + item + "|" + at.Format(time.RFC3339), Schedule: "s", Item: item, ScheduledAt: at, SkipIfActive: true}
	}
	q.Advance(ctx, store.Advance{Schedule: "s", To: t0})
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: t0, To: i1, Jobs: []store.NewJob{mk(i1, "a")}}); err != nil {
		t.Fatal(err)
	}
	res, err := q.Advance(ctx, store.Advance{Schedule: "s", From: i1, To: i2, Jobs: []store.NewJob{mk(i2, "a"), mk(i2, "b")}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Skipped || res[0].Inserted || res[1].Skipped || !res[1].Inserted {
		t.Errorf("results = %+v, want a skipped (a still pending), b inserted", res)
	}
	skips, err := q.ListSkips(ctx, "s", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 1 || skips[0].Item != "a" || skips[0].Reason != store.SkipOverlap || !skips[0].ScheduledAt.Equal(i2) {
		t.Errorf("skips = %+v", skips)
	}
}

func testPauseIsDurable(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	if err := q.SetPaused(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	cs, _ := q.Cursors(ctx)
	if c := cs["s"]; !c.Paused || !c.At.Equal(t0) || !c.PausedAt.Equal(t0) {
		t.Errorf("cursor = %+v, want paused at %v", c, t0)
	}
	q.SetPaused(ctx, "s", false)
	cs, _ = q.Cursors(ctx)
	if cs["s"].Paused {
		t.Error("still paused after resume")
	}
}

// testAdvanceComparesThePause: the pause is part of the cursor's
// compare-and-set. An Advance read before a pause commits nothing after it;
// only a resuming Advance moves a paused cursor, and it resumes it.
func testAdvanceComparesThePause(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	i1 := t0.Add(time.Minute)
	job := []store.NewJob{{Type: "t", Key: "s||1", Schedule: "s", ScheduledAt: i1, RunAt: i1}}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", To: t0}); err != nil {
		t.Fatal(err)
	}
	read, _ := q.Cursors(ctx)
	if err := q.SetPaused(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	_, err := q.Advance(ctx, store.Advance{Schedule: "s", From: read["s"].At, Paused: read["s"].Paused, To: i1, Jobs: job})
	if !errors.Is(err, store.ErrCursorMoved) {
		t.Fatalf("store.Advance read before the pause = %v, want store.ErrCursorMoved", err)
	}
	if _, err := jobByRef(ctx, q, "s||1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("store.Advance read before the pause inserted its job: %v", err)
	}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: t0, To: i1, Resume: true}); err == nil {
		t.Error("Resume without Paused accepted")
	}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: t0, Paused: true, Resume: true, To: i1, Jobs: job}); err != nil {
		t.Fatalf("resuming Advance: %v", err)
	}
	cs, _ := q.Cursors(ctx)
	if c := cs["s"]; c.Paused || !c.At.Equal(i1) || !c.PausedAt.IsZero() {
		t.Errorf("cursor = %+v, want running at %v", c, i1)
	}
	mustJob(t, q, "s||1")
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: i1, Paused: true, Resume: true, To: i1}); !errors.Is(err, store.ErrCursorMoved) {
		t.Errorf("second resume = %v, want store.ErrCursorMoved", err)
	}
	// A schedule paused before it had a cursor is not created by a beat.
	if err := q.SetPaused(ctx, "new", true); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "new", To: t0}); !errors.Is(err, store.ErrCursorMoved) {
		t.Errorf("creating a paused cursor = %v, want store.ErrCursorMoved", err)
	}
}

// testAdvanceBatchIsAdvanceByAdvance: a batch of Advances too large for
// one transaction, some invalid, gives each the result Advance would.
func testAdvanceBatchIsAdvanceByAdvance(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	i1 := t0.Add(time.Minute)
	var advs []store.Advance
	for i := range 30 { // 30 x 201 rows: two transactions
		s := fmt.Sprintf("s%02d", i)
		a := store.Advance{Schedule: s, To: i1}
		for k := range 200 {
			a.Jobs = append(a.Jobs, store.NewJob{Type: "t", Key: fmt.Sprintf("%s|%d|1", s, k), Schedule: s, ScheduledAt: i1})
		}
		advs = append(advs, a)
	}
	advs[3].To, advs[3].From = t0, i1                             // backwards
	advs[20].Jobs = append(advs[20].Jobs, store.NewJob{Key: "x"}) // no type
	res, err := q.AdvanceBatch(ctx, advs)
	if err != nil {
		t.Fatal(err)
	}
	cursors, _ := q.Cursors(ctx)
	for i, r := range res {
		s := advs[i].Schedule
		if i == 3 || i == 20 {
			if r.Err == nil || errors.Is(r.Err, store.ErrCursorMoved) {
				t.Errorf("%s: invalid advance gave %v", s, r.Err)
			}
			if _, ok := cursors[s]; ok {
				t.Errorf("%s: invalid advance created a cursor", s)
			}
			continue
		}
		if r.Err != nil || len(r.Jobs) != 200 || !r.Jobs[199].Inserted {
			t.Errorf("%s: err %v, %d jobs", s, r.Err, len(r.Jobs))
		}
	}
	if _, err := q.AdvanceBatch(ctx, []store.Advance{{Schedule: "a", To: t0}, {Schedule: "a", To: i1}}); err == nil {
		t.Error("a batch with a schedule twice was accepted")
	}
}

// testAdvanceBatchResultsFollowTheBatch: the store commits a batch in the
// order of the schedules' names, not in the batch's; each result is still
// that of the Advance at its place, with the jobs of that Advance, across
// transactions and with one Advance refused in the middle.
func testAdvanceBatchResultsFollowTheBatch(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	i1 := t0.Add(time.Minute)
	const n = 60 // about 6,000 rows: more than one transaction
	var advs []store.Advance
	for i := range n {
		s := fmt.Sprintf("s%02d", (37*i)%n) // names out of order
		a := store.Advance{Schedule: s, To: i1}
		for k := range 70 + i {
			a.Jobs = append(a.Jobs, store.NewJob{Type: "t", Key: fmt.Sprintf("%s|%d|1", s, k), Schedule: s, ScheduledAt: i1})
		}
		advs = append(advs, a)
	}
	const refused = 25
	advs[refused].To, advs[refused].From = t0, i1 // backwards
	res, err := q.AdvanceBatch(ctx, advs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		a := advs[i]
		if i == refused {
			if r.Err == nil || r.Jobs != nil {
				t.Errorf("%s: backward advance gave %+v", a.Schedule, r)
			}
			continue
		}
		if r.Err != nil || len(r.Jobs) != len(a.Jobs) {
			t.Errorf("%s: err %v, %d jobs, want %d", a.Schedule, r.Err, len(r.Jobs), len(a.Jobs))
			continue
		}
		for k, e := range r.Jobs {
			j, err := q.Job(ctx, e.ID)
			if err != nil || e.Key != a.Jobs[k].Key || j.Key != e.Key || !e.Inserted {
				t.Errorf("%s job %d: result %+v for key %s, stored %+v (%v)", a.Schedule, k, e, a.Jobs[k].Key, j, err)
				break
			}
		}
	}
}

// testAdvanceBatchCommitsWinnersOnly: in one batch, schedules whose
// cursor moved (another beat won), that were paused since they were read,
// or whose cursor another beat created first, write nothing, while the
// others, before and after them and in the same statements, commit their
// jobs, skips and cursors.
func testAdvanceBatchCommitsWinnersOnly(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	i1, i2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	const n = 250 // more than one moveCursorsSQL statement
	name := func(i int) string { return fmt.Sprintf("s%03d", i) }
	for i := range n {
		if _, err := q.Advance(ctx, store.Advance{Schedule: name(i), To: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Advance(ctx, store.Advance{Schedule: "taken", To: t0}); err != nil {
		t.Fatal(err)
	}
	const moved, paused = 7, 130
	if _, err := q.Advance(ctx, store.Advance{Schedule: name(moved), From: t0, To: i1}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetPaused(ctx, name(paused), true); err != nil {
		t.Fatal(err)
	}
	jobs := func(s string, at time.Time) []store.NewJob {
		return []store.NewJob{
			{Type: "t", Key: s + "|a|" + at.Format(time.RFC3339), Schedule: s, Item: "a", ScheduledAt: at},
			{Type: "t", Key: s + "|b|" + at.Format(time.RFC3339), Schedule: s, Item: "b", ScheduledAt: at},
		}
	}
	var advs []store.Advance
	for i := range n {
		s := name(i)
		advs = append(advs, store.Advance{Schedule: s, From: t0, To: i2, Jobs: jobs(s, i2),
			Skips: []store.Skip{{Schedule: s, ScheduledAt: i1, Reason: store.SkipMisfire}}})
	}
	advs = append(advs,
		store.Advance{Schedule: "fresh", To: i2, Jobs: jobs("fresh", i2)},
		store.Advance{Schedule: "taken", To: i2, Jobs: jobs("taken", i2)})
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
			if !errors.Is(r.Err, store.ErrCursorMoved) || r.Jobs != nil {
				t.Errorf("%s: result %+v, want store.ErrCursorMoved and no jobs", a.Schedule, r)
			}
			for _, j := range a.Jobs {
				if _, err := jobByRef(ctx, q, j.Key); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s lost its compare-and-set but its job %s landed (%v)", a.Schedule, j.Key, err)
				}
			}
			if got := cursors[a.Schedule].At; got.Equal(i2) {
				t.Errorf("%s lost its compare-and-set but its cursor moved to %v", a.Schedule, got)
			}
			if skips, _ := q.ListSkips(ctx, a.Schedule, 10); len(skips) != 0 {
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
			if skips, _ := q.ListSkips(ctx, a.Schedule, 10); len(skips) != 1 {
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

// testAdvancePauseAndSkips: an overlap and a misfire are recorded as
// skips; an Advance read running writes nothing once the schedule is
// paused; one AdvanceBatch resumes a paused schedule, creates a cursor and
// refuses a backwards move, each on its own; a stale Advance in a batch
// loses alone; the skips are found, counted and listed.
func testAdvancePauseAndSkips(t *testing.T, su *suite) {
	t.Parallel()
	s, _ := su.open(t)
	ctx := context.Background()
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

// testCursorsByName: CursorsByName yields every cursor once, in the byte
// order of the names whatever the database's collation, as Cursors has
// them, and stops without error when yield returns false.
func testCursorsByName(t *testing.T, su *suite) {
	t.Parallel()
	s, _ := su.open(t)
	ctx := context.Background()
	names := []string{"b", "é", "B", "ab", "a b", "a", "Z"}
	advs := make([]store.Advance, len(names))
	for i, name := range names {
		advs[i] = store.Advance{Schedule: name, To: t0.Add(time.Duration(i) * time.Minute)}
	}
	if _, err := s.AdvanceBatch(ctx, advs); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPaused(ctx, "ab", true); err != nil {
		t.Fatal(err)
	}
	want, err := s.Cursors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = s.CursorsByName(ctx, func(c store.Cursor) bool {
		got = append(got, c.Schedule)
		if w := want[c.Schedule]; c != w {
			t.Errorf("cursor %+v, want %+v as Cursors reads it", c, w)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if order := []string{"B", "Z", "a", "a b", "ab", "b", "é"}; !slices.Equal(got, order) {
		t.Errorf("CursorsByName yielded %q, want %q", got, order)
	}
	got = nil
	err = s.CursorsByName(ctx, func(c store.Cursor) bool {
		got = append(got, c.Schedule)
		return len(got) < 2
	})
	if err != nil || !slices.Equal(got, []string{"B", "Z"}) {
		t.Errorf("CursorsByName stopped after two = %q, %v; want [B Z], no error", got, err)
	}
}
