package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The reads of the dashboard's charts: jobs counted into equal buckets of
// time, and a schedule's recent instants timed. Every figure is derived
// from the jobs' rows, which every node shares, so any node draws the same
// chart; nothing is sampled.

// Buckets are N equal spans of time from From: bucket i is
// [From+i*Size, From+(i+1)*Size).
type Buckets struct {
	From time.Time
	Size time.Duration // at least a millisecond, in whole milliseconds
	N    int           // 1 to MaxBuckets
}

// MaxBuckets bounds Buckets.N.
const MaxBuckets = 500

// start is bucket i's first instant.
func (b Buckets) start(i int) time.Time { return b.From.Add(time.Duration(i) * b.Size) }

func (b Buckets) check() error {
	if b.N < 1 || b.N > MaxBuckets {
		return fmt.Errorf("buckets: %d: want 1 to %d", b.N, MaxBuckets)
	}
	if b.Size < time.Millisecond || b.Size%time.Millisecond != 0 {
		return fmt.Errorf("buckets: size %s: want whole milliseconds", b.Size)
	}
	if b.From.IsZero() {
		return errors.New("buckets: no start")
	}
	return nil
}

// Activity is what happened to jobs in one bucket.
type Activity struct {
	Start time.Time
	// Done, Dead and Cancelled count the jobs that ended so in the bucket
	// (by finished_at).
	Done, Dead, Cancelled int
	// Started counts the ended jobs whose last attempt started in the
	// bucket; LatencyP50 and LatencyP95 are their start latency, from
	// run_at (when the attempt became due: the instant or the enqueue for a
	// first attempt, the retry's time for a later one) to started_at. Each
	// is the greatest latency of the class (LatencyBounds) that holds the
	// percentile: exact to within the class. Only Activity of all jobs
	// fills them.
	Started                int
	LatencyP50, LatencyP95 time.Duration
	// Depth is how many jobs were due and not started at the bucket's end
	// (or at its last instant for the current bucket): pending jobs from
	// run_at, and jobs since started or cancelled, until then. A retried
	// job counts from its latest run_at. Only Activity of all jobs fills it.
	Depth int
}

// LatencyBounds are the upper bounds of the classes of start latency the
// engines count jobs in; the last class is every greater latency.
var LatencyBounds = [...]time.Duration{
	10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// LatencyClass returns SQL mapping ms, an expression of milliseconds, to
// its class: the index of the first bound it is below, or
// len(LatencyBounds).
func LatencyClass(ms string) string {
	var b strings.Builder
	b.WriteString("CASE")
	for i, d := range LatencyBounds {
		fmt.Fprintf(&b, " WHEN %s < %d THEN %d", ms, d.Milliseconds(), i)
	}
	fmt.Fprintf(&b, " ELSE %d END", len(LatencyBounds))
	return b.String()
}

// StillWaiting is the bucket a pending job left the queue in, as
// Statements.Waiting reads it.
const StillWaiting = -2

// RunTiming is how one instant of a schedule ran: its jobs (one per
// fan-out item), from the first start to the last finish.
type RunTiming struct {
	ScheduledAt time.Time
	FirstStart  time.Time // zero when none started
	LastFinish  time.Time // zero until every job ended
	Jobs, Dead  int
}

// Activity implements JobViews.Activity.
func (e *Base) Activity(ctx context.Context, schedule string, b Buckets) ([]Activity, error) {
	if err := b.check(); err != nil {
		return nil, fmt.Errorf("activity: %w", err)
	}
	out := make([]Activity, b.N)
	for i := range out {
		out[i].Start = b.start(i)
	}
	size := b.Size.Milliseconds()
	var err error
	if schedule != "" {
		err = e.read(ctx, e.q.ActivityOf, schedule, b.From, size).Each(func(r Row) (bool, error) {
			var fb int
			var st State
			var n int
			if err := r.Scan(&fb, &st, &n); err != nil {
				return false, err
			}
			if fb >= 0 && fb < b.N {
				out[fb].add(st, n)
			}
			return true, nil
		})
	} else {
		err = e.activityAll(ctx, b, out)
	}
	if err != nil {
		return nil, fmt.Errorf("activity of %q: %w", schedule, err)
	}
	return out, nil
}

func (a *Activity) add(st State, n int) {
	switch st {
	case StateDone:
		a.Done += n
	case StateDead, StateDiscarded: // a discarded job failed, as a dead one
		a.Dead += n
	case StateCancelled:
		a.Cancelled += n
	}
}

// latencies are a bucket's start latencies by class: how many, and the
// greatest, in milliseconds.
type latencies struct {
	n   [len(LatencyBounds) + 1]int
	max [len(LatencyBounds) + 1]int64
}

// activityAll fills out from the jobs ended since b.From and the waiting
// ones.
func (e *Base) activityAll(ctx context.Context, b Buckets, out []Activity) error {
	gs, shift, err := e.endedGroups(ctx, b)
	if err != nil {
		return err
	}
	lat := make([]latencies, b.N)
	depth := make([]int, b.N+1) // difference array over bucket ends
	wait := func(due, left, n int) {
		// Waiting at the end of buckets due..left-1.
		lo, hi := max(due, 0), min(left, b.N)
		if lo < hi {
			depth[lo] += n
			depth[hi] -= n
		}
	}
	for _, g := range gs {
		fb, lb, due := int(g.Ended-shift), int(g.Started-shift), int(max(g.Due-shift, -1))
		if fb >= 0 && fb < b.N {
			out[fb].add(g.State, g.N)
		}
		wait(due, lb, g.N)
		if class := g.Class; class >= 0 && lb >= 0 && lb < b.N {
			class = min(class, len(LatencyBounds))
			l := &lat[lb]
			l.n[class] += g.N
			l.max[class] = max(l.max[class], g.Most)
		}
	}
	err = e.read(ctx, e.q.Waiting, b.From, b.Size.Milliseconds(), b.start(b.N)).Each(func(r Row) (bool, error) {
		var due, left, n int
		if err := r.Scan(&due, &left, &n); err != nil {
			return false, err
		}
		if left == StillWaiting {
			left = b.N
		}
		wait(due, left, n)
		return true, nil
	})
	if err != nil {
		return err
	}
	run := 0
	for i := range out {
		run += depth[i]
		out[i].Depth = run
		out[i].Started, out[i].LatencyP50, out[i].LatencyP95 = lat[i].percentiles()
	}
	return nil
}

// endedGroups returns the groups of the jobs ended since b.From, their
// buckets counted from an origin shift buckets before b.From. Hourly
// buckets take the hours that ended before the last bucket and before
// now from the charts' hours (chartHours), the rest from the rows.
func (e *Base) endedGroups(ctx context.Context, b Buckets) (gs []activityGroup, shift int64, err error) {
	origin, live := b.From, b.From
	if e.q.ChartMarks != "" && b.Size == time.Hour && b.From.UnixMilli()%hourMS == 0 {
		origin = time.UnixMilli(0)
		closed := e.clock.Now().Truncate(time.Hour)
		if last := b.start(b.N - 1); last.Before(closed) {
			closed = last
		}
		if closed.After(b.From) {
			if gs, err = e.chartHours(ctx, b.From, closed); err != nil {
				return nil, 0, err
			}
			live = closed
		}
	}
	size := b.Size.Milliseconds()
	err = e.read(ctx, e.q.ActivityAll, origin, size, live, endOfTime).Each(func(r Row) (bool, error) {
		g, err := scanActivityGroup(r)
		gs = append(gs, g)
		return true, err
	})
	return gs, b.From.Sub(origin).Milliseconds() / size, err
}

// percentiles returns how many latencies l holds and their 50th and 95th
// percentiles, as the greatest latency of the class holding each.
func (l *latencies) percentiles() (n int, p50, p95 time.Duration) {
	for _, c := range l.n {
		n += c
	}
	at := func(p float64) time.Duration {
		rank := int(p*float64(n) + 0.999999)
		seen := 0
		for i, c := range l.n {
			if seen += c; seen >= rank && c > 0 {
				return time.Duration(max(l.max[i], 0)) * time.Millisecond
			}
		}
		return 0
	}
	if n == 0 {
		return 0, 0, 0
	}
	return n, at(0.50), at(0.95)
}

// RunTimings implements JobViews.RunTimings.
func (e *Base) RunTimings(ctx context.Context, schedule string, limit int) ([]RunTiming, error) {
	if err := CheckLimit("run timings", limit); err != nil {
		return nil, err
	}
	out, err := Collect(e.read(ctx, e.q.RunTimings, schedule, limit), func(r Row) (RunTiming, error) {
		var rt RunTiming
		var at, start, finish Time
		var ended int
		err := r.Scan(&at, &start, &finish, &rt.Jobs, &rt.Dead, &ended)
		rt.ScheduledAt, rt.FirstStart = at.Time, start.Time
		if ended == rt.Jobs {
			rt.LastFinish = finish.Time
		}
		return rt, err
	})
	if err != nil {
		return nil, fmt.Errorf("run timings of %s: %w", schedule, err)
	}
	return out, nil
}
