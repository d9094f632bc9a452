package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// chartRuns is how many newest instants a schedule's durations chart
// shows.
const chartRuns = 50

// The ranges of /charts: the last day or week, by the hour.
var chartRanges = map[string]int{"day": 24, "week": 7 * 24}

// chartsPage is the data of /charts.
type chartsPage struct {
	Range  string
	Ranges []string
	Totals activityTotals
	Runs   barChart
	Waits  barChart
	Depth  barChart
}

// activityTotals sums a range's buckets.
type activityTotals struct {
	Done, Dead, Cancelled, Started int
}

// charts is /charts: every job's runs and failures, start latency and the
// queue's depth, per hour over the last day or week.
func (s *server) charts(w http.ResponseWriter, r *http.Request) {
	rng := r.URL.Query().Get("range")
	if rng == "" {
		rng = "day"
	}
	n, ok := chartRanges[rng]
	if !ok {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("range %q: want day or week", rng))
		return
	}
	b := hourBuckets(s.clock.Now(), n)
	acts, err := s.q.Activity(r.Context(), "", b)
	if err != nil {
		s.failRead(w, r, "activity", err)
		return
	}
	data := chartsPage{Range: rng, Ranges: []string{"day", "week"}, Totals: totals(acts)}
	span := fmt.Sprintf("per hour from %s to %s UTC", b.From.UTC().Format("2006-01-02 15:04"), b.From.Add(time.Duration(n)*b.Size).UTC().Format("2006-01-02 15:04"))
	data.Runs = runsChart("runs", "Runs per hour, all schedules and jobs", span, acts, hourTick(n))
	data.Waits = latencyChart(span, acts, hourTick(n))
	data.Depth = depthChart(span, acts, hourTick(n))
	s.render(w, r, http.StatusOK, "charts", "Charts", "charts", data)
}

// hourBuckets are the n hours up to now's, which is the last.
func hourBuckets(now time.Time, n int) store.Buckets {
	return store.Buckets{From: now.UTC().Truncate(time.Hour).Add(-time.Duration(n-1) * time.Hour), Size: time.Hour, N: n}
}

// dayBuckets are the n days (UTC) up to now's, which is the last.
func dayBuckets(now time.Time, n int) store.Buckets {
	return store.Buckets{From: now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(n - 1)), Size: 24 * time.Hour, N: n}
}

// hourTick labels an hourly axis of n bars: every third hour for a day,
// every midnight for a week.
func hourTick(n int) func(t time.Time) string {
	return func(t time.Time) string {
		t = t.UTC()
		switch {
		case n <= 24 && t.Hour()%3 == 0:
			return t.Format("15:04")
		case n > 24 && t.Hour() == 0:
			return t.Format("Jan 2")
		}
		return ""
	}
}

func dayTick(t time.Time) string { return t.UTC().Format("Jan 2") }

func totals(acts []store.Activity) activityTotals {
	var t activityTotals
	for _, a := range acts {
		t.Done += a.Done
		t.Dead += a.Dead
		t.Cancelled += a.Cancelled
		t.Started += a.Started
	}
	return t
}

// runsChart draws acts' ended jobs per bucket: done, dead and cancelled.
func runsChart(id, title, span string, acts []store.Activity, tickOf func(time.Time) string) barChart {
	t := totals(acts)
	desc := fmt.Sprintf("%s, %s: %d done, %d dead, %d cancelled.", title, span, t.Done, t.Dead, t.Cancelled)
	points := make([]point, len(acts))
	for i, a := range acts {
		points[i] = point{Label: a.Start.UTC().Format("2006-01-02 15:04 UTC"), Tick: tickOf(a.Start),
			Values: []float64{float64(a.Done), float64(a.Dead), float64(a.Cancelled)}}
	}
	c := newBarChart(id, title, desc, []series{{"s-done", "done"}, {"s-dead", "dead"}, {"s-cancelled", "cancelled"}}, points, countAxis, nil)
	c.XLabel, c.YLabel = "bucket start (UTC)", "jobs ended"
	return c
}

// latencyChart draws each hour's start latency: p50, and p95 above it.
func latencyChart(span string, acts []store.Activity, tickOf func(time.Time) string) barChart {
	var worst time.Duration
	points := make([]point, len(acts))
	for i, a := range acts {
		worst = max(worst, a.LatencyP95)
		points[i] = point{Label: a.Start.UTC().Format("2006-01-02 15:04 UTC") + fmt.Sprintf(" (%d started)", a.Started),
			Tick: tickOf(a.Start), Values: []float64{a.LatencyP50.Seconds(), (a.LatencyP95 - a.LatencyP50).Seconds()}}
	}
	desc := fmt.Sprintf("Start latency %s, from when a job's attempt became due to its start: the 50th and 95th percentiles of the ended jobs by the hour they started; the highest 95th percentile is %s.",
		span, shortDuration(worst))
	c := newBarChart("latency", "Start latency (p50, p95)", desc, []series{{"s-p50", "p50"}, {"s-p95", "p95 (above p50)"}}, points, durationAxis, nil)
	c.XLabel, c.YLabel = "hour the job started (UTC)", "wait"
	return c
}

// depthChart draws how many jobs were due and not started at each hour's
// end.
func depthChart(span string, acts []store.Activity, tickOf func(time.Time) string) barChart {
	most := 0
	points := make([]point, len(acts))
	for i, a := range acts {
		most = max(most, a.Depth)
		points[i] = point{Label: "end of " + a.Start.UTC().Format("2006-01-02 15:04 UTC"), Tick: tickOf(a.Start), Values: []float64{float64(a.Depth)}}
	}
	desc := fmt.Sprintf("Queue depth %s: the jobs due and not yet started at the end of each hour (the last bar: now); at most %d.", span, most)
	c := newBarChart("depth", "Queue depth", desc, []series{{"s-depth", "due, not started"}}, points, countAxis, nil)
	c.XLabel, c.YLabel = "hour (UTC), at its end", "jobs waiting"
	return c
}

// scheduleCharts are the charts on a schedule's page.
type scheduleCharts struct {
	Hours     barChart
	Days      barChart
	Durations barChart
	Runs      int // instants on the durations chart
}

// scheduleCharts reads and draws sc's charts: three bounded reads.
func (s *server) scheduleCharts(ctx context.Context, sc *config.Schedule) (scheduleCharts, error) {
	now := s.clock.Now()
	var out scheduleCharts
	hb, db := hourBuckets(now, 24), dayBuckets(now, 7)
	hours, err := s.q.Activity(ctx, sc.Name, hb)
	if err != nil {
		return out, err
	}
	days, err := s.q.Activity(ctx, sc.Name, db)
	if err != nil {
		return out, err
	}
	runs, err := s.q.RunTimings(ctx, sc.Name, chartRuns)
	if err != nil {
		return out, err
	}
	out.Hours = runsChart("runs-hours", "Runs of "+sc.Name+" per hour", "last 24 hours", hours, hourTick(24))
	out.Days = runsChart("runs-days", "Runs of "+sc.Name+" per day", "last 7 days (UTC)", days, dayTick)
	out.Durations, out.Runs = durationsChart(sc, runs)
	return out, nil
}

// durationsChart draws each ended instant of runs from its instant: the
// wait for the first start, then the run to the last finish, against the
// schedule's start_within and deadline.
func durationsChart(sc *config.Schedule, runs []store.RunTiming) (barChart, int) {
	var points []point
	var ats []time.Time
	var slowest time.Duration
	for _, rt := range runs {
		if rt.LastFinish.IsZero() || rt.FirstStart.IsZero() {
			continue
		}
		wait, run := rt.FirstStart.Sub(rt.ScheduledAt), rt.LastFinish.Sub(rt.FirstStart)
		slowest = max(slowest, wait+run)
		p := point{Label: rt.ScheduledAt.In(sc.Location).Format("2006-01-02 15:04 MST") + fmt.Sprintf(" (%d jobs, %d dead)", rt.Jobs, rt.Dead),
			Values: []float64{max(wait, 0).Seconds(), max(run, 0).Seconds()}}
		if rt.Dead > 0 {
			p.Classes = []string{"", "s-dead"}
		}
		points = append(points, p)
		ats = append(ats, rt.ScheduledAt)
	}
	for i := range points {
		if i == 0 || i == len(points)-1 || i == len(points)/2 {
			points[i].Tick = ats[i].In(sc.Location).Format("Jan 2 15:04")
		}
	}
	rules := map[string]float64{}
	if sc.StartWithin > 0 {
		rules["start"] = sc.StartWithin.Seconds()
	}
	if sc.Deadline > 0 {
		rules["deadline"] = sc.Deadline.Seconds()
	}
	desc := fmt.Sprintf("The last %d ended runs of %s, oldest first, from the instant to the last job's finish: the wait for the first start, then the run; a run with a dead job is drawn in the failure colour. The slowest took %s; the deadline is %s.",
		len(points), sc.Name, shortDuration(slowest), orNone(sc.Deadline))
	c := newBarChart("durations", "Durations of the last runs of "+sc.Name, desc, []series{{"s-wait", "wait to start"}, {"s-run", "run"}}, points, durationAxis, rules)
	c.XLabel, c.YLabel = "instant, oldest first", "from the instant"
	return c, len(points)
}
