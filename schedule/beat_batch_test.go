package schedule

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// batchStore records the schedules of each AdvanceBatch call, and fails as
// a whole the calls that name a schedule in fail.
type batchStore struct {
	store.Engine
	fail map[string]bool

	mu       sync.Mutex
	calls    [][]string
	advances int // calls of Advance
}

func (s *batchStore) Advance(ctx context.Context, a store.Advance) ([]queue.Enqueued, error) {
	s.mu.Lock()
	s.advances++
	s.mu.Unlock()
	return s.Engine.Advance(ctx, a)
}

var errBatchCall = errors.New("the call failed as a whole")

func (s *batchStore) AdvanceBatch(ctx context.Context, advs []store.Advance) ([]store.AdvanceResult, error) {
	names := make([]string, len(advs))
	failed := false
	for i, a := range advs {
		names[i] = a.Schedule
		failed = failed || s.fail[a.Schedule]
	}
	s.mu.Lock()
	s.calls = append(s.calls, names)
	s.mu.Unlock()
	if failed {
		return nil, errBatchCall
	}
	return s.Engine.AdvanceBatch(ctx, advs)
}

// fanOuts returns a file of one schedule per name, due every minute, each
// fanned out to items items; the schedules are in the file in the order of
// names.
func fanOuts(items int, names ...string) string {
	var sb strings.Builder
	sb.WriteString("[tasks.t]\n")
	for _, name := range names {
		fmt.Fprintf(&sb, "[[schedule]]\nname = %q\ncron = \"* * * * *\"\ntask = \"t\"\nfor_each = [\n", name)
		for i := range items {
			fmt.Fprintf(&sb, "{ n = %d },\n", i)
		}
		sb.WriteString("]\n")
	}
	return sb.String()
}

// newBatchBeat returns a beat over a batchStore on a new queue file, its
// cursors created at t0, whose AdvanceBatch calls fail from then on when
// they name a schedule of fail.
func newBatchBeat(t *testing.T, cfg *config.Config, fail ...string) (*Beat, *batchStore, *queue.Client) {
	t.Helper()
	base, clk := newTestQueue(t)
	bs := &batchStore{Engine: base.Engine(), fail: map[string]bool{}}
	q, _ := queue.New(bs, queue.Config{})
	b, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pass(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	for _, name := range fail {
		bs.fail[name] = true
	}
	bs.calls = nil
	return b, bs, q
}

// TestPassCommitsInBatchesByName: a pass whose instants are more rows than
// one transaction holds commits them in several AdvanceBatch calls, the
// schedules in the order of their names whatever the file's order, each
// call at most a transaction's rows (plus the tick that reached it), and
// every schedule's jobs and cursor land.
func TestPassCommitsInBatchesByName(t *testing.T) {
	const items = 2000 // 2,001 rows a tick: three ticks pass a transaction's 5,000
	names := []string{"e", "d", "c", "b", "a"}
	cfg := mustParse(t, fanOuts(items, names...))
	b, bs, q := newBatchBeat(t, cfg)
	if _, err := b.pass(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(bs.calls) < 2 {
		t.Errorf("calls = %v, want at least two", bs.calls)
	}
	perCall := (store.AdvanceBatchRows + items) / (items + 1)
	for _, call := range bs.calls {
		if len(call) > perCall {
			t.Errorf("call of %v: more than %d ticks of %d rows", call, perCall, items+1)
		}
	}
	if got, want := slices.Concat(bs.calls...), []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("schedules committed in the order %v, want %v", got, want)
	}
	for _, name := range names {
		if n := len(jobs(t, q, name)); n != items {
			t.Errorf("schedule %s: %d jobs, want %d", name, n, items)
		}
		if c := cursor(t, q, name); !c.At.Equal(t0.Add(time.Minute)) {
			t.Errorf("schedule %s: cursor at %v, want 12:01", name, c.At)
		}
	}
}

// TestPassFailedBatchCall: an AdvanceBatch call that fails as a whole fails
// the pass and writes nothing of its schedules, while the schedules of the
// other calls commit; the next pass materialises the rest, each instant
// once.
func TestPassFailedBatchCall(t *testing.T) {
	const items = 3000 // 3,001 rows a tick: "a" and "c" are never in one call
	cfg := mustParse(t, fanOuts(items, "a", "b", "c"))
	b, bs, q := newBatchBeat(t, cfg, "a")
	_, err := b.pass(context.Background(), t0.Add(time.Minute))
	if !errors.Is(err, errBatchCall) {
		t.Fatalf("pass = %v, want the failed call's error", err)
	}
	if n := len(jobs(t, q, "a")); n != 0 {
		t.Errorf("schedule a: %d jobs after its call failed, want 0", n)
	}
	if c := cursor(t, q, "a"); !c.At.Equal(t0) {
		t.Errorf("schedule a: cursor at %v after its call failed, want 12:00", c.At)
	}
	if n := len(jobs(t, q, "c")); n != items {
		t.Errorf("schedule c: %d jobs, want %d: its call did not fail", n, items)
	}
	delete(bs.fail, "a")
	if _, err := b.pass(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if n := len(jobs(t, q, name)); n != items {
			t.Errorf("schedule %s: %d jobs after the next pass, want %d", name, n, items)
		}
	}
}

// TestPassReadsCursorsInNameOrder: the pass merges the cursors, read in
// the byte order of names, with its schedules in that order: each schedule
// finds its own cursor past the cursors of schedules no longer configured,
// and the beat keeps those as read.
func TestPassReadsCursorsInNameOrder(t *testing.T) {
	q, clk := newTestQueue(t)
	ctx := context.Background()
	for _, gone := range []string{"A0", "a0", "c"} {
		if _, err := q.Advance(ctx, store.Advance{Schedule: gone, To: t0}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := mustParse(t, fanOuts(2, "b", "B", "a"))
	b, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pass(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := b.pass(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "B"} {
		if got := jobs(t, q, name); len(got) != 2 {
			t.Errorf("schedule %s: jobs %v, want the 2 items of 12:01", name, got)
		}
	}
	for _, gone := range []string{"A0", "a0", "c"} {
		if at, ok := b.cursors.Before(gone); !ok || !at.Equal(t0) {
			t.Errorf("cursor of %s as the pass read it = %v, %v; want 12:00", gone, at, ok)
		}
	}
}

// TestPassCreatesCursorsInBatches: the first pass over many new schedules
// creates their cursors, at now, in the batches of AdvanceBatch, not a
// transaction each, and a restart by Apply is committed likewise, with the
// instants due since.
func TestPassCreatesCursorsInBatches(t *testing.T) {
	const n = 600
	base, clk := newTestQueue(t)
	bs := &batchStore{Engine: base.Engine()}
	q, _ := queue.New(bs, queue.Config{})
	cfg := mustParse(t, manySchedules(n, func(i int) int { return i }))
	b, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(500 * time.Millisecond)
	if _, err := b.pass(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if bs.advances != 0 || len(bs.calls) == 0 || len(bs.calls) > 3 {
		t.Errorf("the first pass made %d Advance and %d AdvanceBatch calls, want none and 1 to 3", bs.advances, len(bs.calls))
	}
	cs, err := q.Cursors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != n || !cs["s00000"].At.Equal(t0) || !cs[fmt.Sprintf("s%05d", n-1)].At.Equal(t0) {
		t.Errorf("%d cursors, s00000 at %v: want %d, at 12:00:00", len(cs), cs["s00000"].At, n)
	}

	// s00001 becomes hourly at 12:10:30: its cursor moves there, and the
	// 13:00 instant is its first.
	clk.Set(t0.Add(10*time.Minute + 30*time.Second))
	next := mustParse(t, strings.Replace(manySchedules(n, func(i int) int { return i }),
		"name = \"s00001\"\ncron = \"* * * * *\"", "name = \"s00001\"\ncron = \"0 * * * *\"", 1))
	b.Apply(next)
	bs.calls, bs.advances = nil, 0
	clk.Set(t0.Add(time.Hour))
	if _, err := b.pass(context.Background(), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if bs.advances != 0 {
		t.Errorf("the restart took %d Advance calls, want none", bs.advances)
	}
	if got, want := jobs(t, q, "s00001"), times(time.Hour); !slices.Equal(got, want) {
		t.Errorf("jobs of the re-timed schedule = %v, want %v", got, want)
	}
	if c := cursor(t, q, "s00001"); !c.At.Equal(t0.Add(time.Hour)) {
		t.Errorf("cursor of the re-timed schedule at %v, want 13:00", c.At)
	}
	if len(b.since) != 0 {
		t.Errorf("restart marks left: %v", b.since)
	}
}
