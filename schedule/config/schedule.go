package config

import (
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/schedule/cron"
)

// Overlap is a schedule's policy for an instant that comes while a job of
// the same schedule and item is still pending or running.
type Overlap string

// Overlap policies.
const (
	// OverlapAllow materialises every instant. The default, as with cron.
	OverlapAllow Overlap = "allow"
	// OverlapSkip records the instant as skipped (store.SkipOverlap)
	// instead, per item.
	OverlapSkip Overlap = "skip"
)

// UnmarshalText accepts "allow" or "skip".
func (o *Overlap) UnmarshalText(b []byte) error {
	switch v := Overlap(b); v {
	case OverlapAllow, OverlapSkip:
		*o = v
		return nil
	}
	return fmt.Errorf("%q is not an overlap policy: want allow or skip", b)
}

// Schedule is a [[schedule]] table: when to make which jobs.
type Schedule struct {
	// Name identifies the schedule (key name): its cursor, its jobs' dedup
	// keys. Letters, digits and "-_.:@/".
	Name string
	// Cron is the expression as written (key cron); see cron.Expr.
	Cron string
	// Location is the zone Cron is read in: its CRON_TZ= prefix, else the
	// schedule's timezone key, else Scheduler.Timezone.
	Location *time.Location
	// Task names the [tasks.NAME] whose jobs the schedule makes (key task).
	Task string
	// Payload is merged into every job's payload (key payload).
	Payload map[string]any
	// ForEach fans each instant out to one job per item (key for_each);
	// see Item.
	ForEach []map[string]any
	// CatchUp is the policy for missed instants (key catch_up). Default:
	// cron.CatchUpLatest.
	CatchUp cron.CatchUp
	// CatchUpLimit is how many missed instants cron.CatchUpAll runs (key
	// catch_up_limit, 1 to MaxCatchUpLimit). Default: 100.
	CatchUpLimit int
	// Overlap is the policy for instants that find the previous run still
	// pending or running (key overlap). Default: OverlapAllow.
	Overlap Overlap
	// StartWithin raises a late alarm for an instant whose run, per item,
	// has not started within this time of the instant (key start_within,
	// positive, shorter than Deadline). Default: Scheduler.StartWithin;
	// zero: no late alarms.
	StartWithin time.Duration
	// Deadline raises a missed alarm for an instant whose run, per item,
	// has not succeeded within this time of the instant (key deadline,
	// positive). Default: Scheduler.Deadline; zero: no missed alarms.
	Deadline time.Duration
	// Notify names the tasks that get a job for each alarm of the schedule
	// (key notify). Default: Scheduler.Notify; an empty array: none.
	Notify []string

	expr  *cron.Expr
	items []Item
}

// Watched reports whether the schedule raises alarms: it has a
// start_within, a deadline or tasks to notify. Only a watched schedule's
// dead jobs and misfires raise alarms.
func (s *Schedule) Watched() bool {
	return s.StartWithin > 0 || s.Deadline > 0 || len(s.Notify) > 0
}

// Expr returns the parsed cron expression.
func (s *Schedule) Expr() *cron.Expr { return s.expr }

// Items returns the fan-out: one Item per for_each entry, or one Item with
// ID "" for a schedule without for_each. The caller must not modify it.
func (s *Schedule) Items() []Item { return s.items }

// Next returns the first instant after after at which s fires; see
// cron.Expr.Next.
func (s *Schedule) Next(after time.Time) time.Time { return s.expr.Next(after) }
