package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// LiveCounter is what an engine's test hooks add to its store for the live
// output tests: the rows of live output, hidden ones too.
type LiveCounter interface {
	LiveRows(ctx context.Context) (int, error)
}

// liveRows returns how many rows of live output q's database holds.
func liveRows(t *testing.T, q store.Engine) int {
	t.Helper()
	lc, ok := q.(LiveCounter)
	if !ok {
		t.Fatalf("%T has no LiveRows (see LiveCounter): the engine's tests must add it", q)
	}
	n, err := lc.LiveRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// testLiveOutputFencedEndedReplaced: a PoolTx's Live stores running
// attempts' output in one statement, fenced on owner and attempt, readable
// from another store on the database; it replaces the job's earlier output,
// its LiveEnded deletes it with the result; a reclaimed attempt's output is
// hidden, replaced by the next attempt's, and maintenance deletes what is
// left.
func testLiveOutputFencedEndedReplaced(t *testing.T, su *suite) {
	t.Parallel()
	q, other, clk := su.openTwo(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		mustEnqueue(t, q, store.NewJob{Type: "t", Key: k})
	}
	js := claim(t, q, "P", clk.Now(), time.Minute, 2, "t")
	mustEnqueue(t, q, store.NewJob{Type: "u", Key: "c"})
	theirs := claim(t, q, "Q", clk.Now(), 2*time.Minute, 1, "u")
	if len(js) != 2 || len(theirs) != 1 {
		t.Fatalf("claimed %d and %d jobs, want 2 and 1", len(js), len(theirs))
	}
	a, b, c := js[0], js[1], theirs[0]
	if a.Key != "a" {
		a, b = b, a
	}
	live := func(owner string, ls ...store.LiveOutput) {
		t.Helper()
		if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: clk.Now(), Live: ls}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(id int64) (store.LiveOutput, error) {
		t.Helper()
		return other.LiveOutput(ctx, id)
	}
	want := func(id int64, attempt int, output string) {
		t.Helper()
		l, err := read(id)
		if err != nil || l.Output != output || l.Attempt != attempt || l.JobID != id || !l.Updated.Equal(clk.Now()) {
			t.Errorf("LiveOutput(%d) = %+v, %v; want %q of attempt %d, stored now (%v)", id, l, err, output, attempt, clk.Now())
		}
	}
	none := func(id int64, why string) {
		t.Helper()
		if l, err := read(id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LiveOutput(%d) = %+v, %v; want ErrNotFound: %s", id, l, err, why)
		}
	}
	none(a.ID, "nothing stored yet")
	live("P", store.LiveOutput{JobID: a.ID, Attempt: 1, Output: "one\n"}, store.LiveOutput{JobID: b.ID, Attempt: 1, Output: "b"},
		store.LiveOutput{JobID: c.ID, Attempt: 1, Output: "not P's"}, store.LiveOutput{JobID: b.ID + 1000, Attempt: 1, Output: "no job"})
	want(a.ID, 1, "one\n")
	want(b.ID, 1, "b")
	none(c.ID, "P does not run it")
	live("P", store.LiveOutput{JobID: a.ID, Attempt: 2, Output: "wrong attempt"})
	want(a.ID, 1, "one\n")

	clk.Advance(store.LiveOutputEvery)
	live("P", store.LiveOutput{JobID: a.ID, Attempt: 1, Output: "one\ntwo\n"})
	want(a.ID, 1, "one\ntwo\n")

	// The result deletes it in its transaction.
	r := store.Result{Job: a, Worker: "P/w0", Outcome: store.OutcomeDone, Started: clk.Now(), Finished: clk.Now()}
	res, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(), Results: []store.Result{r},
		LiveEnded: []store.LiveOutput{{JobID: a.ID, Attempt: 1}}})
	if err != nil || !res.Fenced[0] {
		t.Fatalf("finish a: %+v, %v", res, err)
	}
	none(a.ID, "its attempt ended")
	if n := liveRows(t, q); n != 1 {
		t.Errorf("%d rows of live output after a's end, want b's alone", n)
	}
	live("P", store.LiveOutput{JobID: a.ID, Attempt: 1, Output: "after the end"})
	none(a.ID, "a stored output of an ended attempt is fenced off")

	// b's lease expires: its output is hidden, then replaced by the next
	// attempt's.
	clk.Advance(time.Minute)
	if n, err := reclaim(ctx, q); n != 1 || err != nil {
		t.Fatalf("reclaim = %d, %v; want b's lease", n, err)
	}
	none(b.ID, "its attempt was reclaimed")
	if n := liveRows(t, q); n != 0 {
		t.Errorf("%d rows of live output after the maintenance's reclaim, want none left", n)
	}
	again := claim(t, other, "R", clk.Now(), time.Minute, 1, "t")
	if len(again) != 1 || again[0].ID != b.ID || again[0].Attempt != 2 {
		t.Fatalf("claim again = %+v, want b's attempt 2", again)
	}
	none(b.ID, "the new attempt stored nothing yet")
	if _, err := other.CommitPoolTx(ctx, store.PoolTx{Owner: "R", Now: clk.Now(),
		Live: []store.LiveOutput{{JobID: b.ID, Attempt: 2, Output: "second"}}}); err != nil {
		t.Fatal(err)
	}
	want(b.ID, 2, "second")
	// An ended attempt's delete leaves the next attempt's output.
	if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(), LiveEnded: []store.LiveOutput{{JobID: b.ID, Attempt: 1}}}); err != nil {
		t.Fatal(err)
	}
	want(b.ID, 2, "second")
	if _, err := q.Maintain(ctx, keepAll); err != nil {
		t.Fatal(err)
	}
	want(b.ID, 2, "second")
	if n := liveRows(t, q); n != 1 {
		t.Errorf("%d rows of live output, want b's second attempt's alone", n)
	}
}

// testLiveOutputIsCapped: a stored live output longer than MaxOutput is
// capped as attempts' texts are.
func testLiveOutputIsCapped(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "a"})
	js := claim(t, q, "P", clk.Now(), time.Minute, 1, "t")
	long := make([]byte, 2*store.MaxOutput)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(),
		Live: []store.LiveOutput{{JobID: js[0].ID, Attempt: 1, Output: string(long)}}}); err != nil {
		t.Fatal(err)
	}
	l, err := q.LiveOutput(ctx, js[0].ID)
	if err != nil || l.Output != store.CapText(string(long)) {
		t.Errorf("LiveOutput = %d bytes, %v; want %d, capped", len(l.Output), err, len(store.CapText(string(long))))
	}
}
