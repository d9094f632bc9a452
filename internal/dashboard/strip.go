package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Outcomes of a strip's cell (its data-outcome), most severe first.
const (
	outcomeDead      = "dead"
	outcomeMissed    = "missed" // the deadline passed before the run succeeded
	outcomeRunning   = "running"
	outcomePending   = "pending"
	outcomeDiscarded = "discarded" // dead, then discarded by an operator: no success
	outcomeCancelled = "cancelled"
	outcomeSkipped   = "skipped"
	outcomeRetried   = "retried" // done, after more than one attempt
	outcomeDone      = "done"
)

// Cell is one instant of a strip.
type Cell struct {
	Instant When
	Outcome string
	Title   string // what happened, in words
	Href    string // the run page
	Manual  bool   // a manual run (trigger), placed at its creation
}

// instant is one instant of a schedule: its jobs, one per item, its
// skips, and its missed or late alarms; or one manual run, at its
// creation.
type instant struct {
	at     time.Time
	manual bool
	jobs   []*queue.Job
	skips  []store.Skip
	missed map[string]bool // items ("" for all) with a missed alarm
	late   map[string]bool // items with a late alarm
}

// history is a schedule's newest instants, oldest first, at most
// StripLen, with the jobs (newest first) and skips as read. Each read is
// bounded by StripLen times the fan-out, at most queue.MaxList rows, so a
// wider fan-out shows fewer instants.
type history struct {
	instants []*instant
	jobs     []*queue.Job
	skips    []store.Skip
}

// history reads sc's newest jobs and skips into instants; manual runs
// among them, or in extra (jobs of sc read otherwise, such as its running
// and dead ones), are instants of their own.
func (s *server) history(ctx context.Context, sc *config.Schedule, alarms []store.Alarm, extra []*queue.Job) (history, error) {
	limit := min(StripLen*max(len(sc.Items()), 1), queue.MaxList)
	jobs, err := s.q.ScheduleJobs(ctx, sc.Name, limit)
	if err != nil {
		return history{}, fmt.Errorf("jobs of %s: %w", sc.Name, err)
	}
	seen := map[int64]bool{}
	for _, j := range jobs {
		seen[j.ID] = true
	}
	for _, j := range extra {
		if !seen[j.ID] && j.ScheduledAt.IsZero() {
			seen[j.ID] = true
			jobs = append(jobs, j)
		}
	}
	// ListSkips reads one index range; Skips sorts every skip.
	skips, err := s.q.ListSkips(ctx, sc.Name, limit)
	if err != nil {
		return history{}, err
	}
	byAt := map[int64]*instant{}
	var all []*instant
	get := func(at time.Time) *instant {
		k := at.UnixMilli()
		in := byAt[k]
		if in == nil {
			in = &instant{at: at, missed: map[string]bool{}, late: map[string]bool{}}
			byAt[k] = in
			all = append(all, in)
		}
		return in
	}
	for _, j := range jobs {
		if j.ScheduledAt.IsZero() {
			all = append(all, &instant{at: j.CreatedAt, manual: true, jobs: []*queue.Job{j}})
			continue
		}
		in := get(j.ScheduledAt)
		in.jobs = append(in.jobs, j)
	}
	for _, sk := range skips {
		in := get(sk.ScheduledAt)
		in.skips = append(in.skips, sk)
	}
	slices.SortStableFunc(all, func(a, b *instant) int {
		if c := a.at.Compare(b.at); c != 0 || !a.manual || !b.manual {
			return c
		}
		return cmp.Compare(a.jobs[0].ID, b.jobs[0].ID) // manual runs made at once, in order
	})
	if len(all) > StripLen {
		all = all[len(all)-StripLen:]
	}
	h := history{jobs: jobs, skips: skips, instants: all}
	for _, al := range alarms {
		if in := byAt[al.ScheduledAt.UnixMilli()]; in != nil && !al.ScheduledAt.IsZero() {
			switch al.Kind {
			case store.AlarmMissed:
				in.missed[al.Item] = true
			case store.AlarmLate:
				in.late[al.Item] = true
			}
		}
	}
	return h, nil
}

// lastRun is the newest instant among h's jobs, as the deadline rule
// takes it (ScheduleViews.LastRuns); zero when none.
func (h history) lastRun() time.Time {
	var last time.Time
	for _, j := range h.jobs {
		if j.ScheduledAt.After(last) {
			last = j.ScheduledAt
		}
	}
	return last
}

// strip is the cells of instants for item (every item when all).
func (s *server) strip(sc *config.Schedule, instants []*instant, item string, all bool) []Cell {
	cells := make([]Cell, 0, len(instants))
	for _, in := range instants {
		var jobs []*queue.Job
		var skips []store.Skip
		for _, j := range in.jobs {
			if all || j.Item == item {
				jobs = append(jobs, j)
			}
		}
		for _, sk := range in.skips {
			if all || sk.Item == item || sk.Item == "" {
				skips = append(skips, sk)
			}
		}
		if len(jobs) == 0 && len(skips) == 0 {
			continue
		}
		missed := in.missed[""] || (all && len(in.missed) > 0) || in.missed[item]
		late := in.late[""] || (all && len(in.late) > 0) || in.late[item]
		c := s.cell(sc, in.at, jobs, skips, missed, late)
		if in.manual {
			c.Manual, c.Title = true, c.Instant.Text+": manual run, "+strings.TrimPrefix(c.Title, c.Instant.Text+": ")
		}
		if !all && len(jobs) == 0 {
			c.Href = runHref(sc.Name, item, in.at)
		}
		cells = append(cells, c)
	}
	return cells
}

// cell is one instant's cell: the most severe of its jobs' outcomes,
// missed past its deadline, skipped when a skip is all it has.
func (s *server) cell(sc *config.Schedule, at time.Time, jobs []*queue.Job, skips []store.Skip, missed, late bool) Cell {
	c := Cell{Instant: s.when(at, sc.Location)}
	var worst *queue.Job
	states := map[string]int{}
	retried := false
	for _, j := range jobs {
		states[string(j.State)]++
		if j.State == queue.StateDone && j.Attempt > 1 {
			retried = true
		}
		if worst == nil || severity(j.State) < severity(worst.State) {
			worst = j
		}
	}
	switch {
	case states[outcomeDead] > 0:
		c.Outcome = outcomeDead
	case missed:
		c.Outcome = outcomeMissed
	case states[outcomeRunning] > 0:
		c.Outcome = outcomeRunning
	case states[outcomePending] > 0:
		c.Outcome = outcomePending
	case states[outcomeDiscarded] > 0:
		c.Outcome = outcomeDiscarded
	case states[outcomeCancelled] > 0:
		c.Outcome = outcomeCancelled
	case len(skips) > 0:
		c.Outcome = outcomeSkipped
	case retried:
		c.Outcome = outcomeRetried
	default:
		c.Outcome = outcomeDone
	}
	var words []string
	switch {
	case len(jobs) == 1:
		j := jobs[0]
		w := string(j.State)
		switch {
		case j.Attempt > 1:
			w += fmt.Sprintf(" after %d attempts", j.Attempt)
		case j.State == queue.StateDead:
			w += " after 1 attempt"
		}
		if (j.State == queue.StateDead || j.State == queue.StateDiscarded) && j.LastError != "" {
			w += ": " + firstLine(s.lastError(j), 80)
		}
		words = append(words, w)
	case len(jobs) > 1:
		var parts []string
		for _, st := range []string{outcomeDone, outcomeCancelled, outcomeDiscarded, outcomePending, outcomeRunning, outcomeDead} {
			if n := states[st]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		words = append(words, fmt.Sprintf("%d items: %s", len(jobs), strings.Join(parts, ", ")))
	}
	for _, sk := range skips {
		w := "skipped (" + string(sk.Reason) + ")"
		if sk.Item != "" && len(jobs)+len(skips) > 1 {
			w = sk.Item + " " + w
		}
		words = append(words, w)
	}
	if missed {
		words = append(words, "deadline missed")
	} else if late {
		words = append(words, "started late")
	}
	c.Title = c.Instant.Text + ": " + strings.Join(words, "; ")
	switch {
	case worst != nil:
		c.Href = fmt.Sprintf("/runs/%d", worst.ID)
	case len(skips) > 0:
		c.Href = runHref(sc.Name, skips[0].Item, at)
	}
	return c
}

// severity orders job states, most severe first.
func severity(st queue.State) int {
	switch st {
	case queue.StateDead:
		return 0
	case queue.StateRunning:
		return 1
	case queue.StatePending:
		return 2
	case queue.StateDiscarded:
		return 3
	case queue.StateCancelled:
		return 4
	}
	return 5
}

// runHref is the link to the run of schedule's item at an instant.
func runHref(schedule, item string, at time.Time) string {
	v := url.Values{"schedule": {schedule}, "instant": {at.UTC().Format(time.RFC3339Nano)}}
	if item != "" {
		v.Set("item", item)
	}
	return "/run?" + v.Encode()
}
