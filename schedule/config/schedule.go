package config

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/schedule/cron"
)

// Overlap is a schedule's policy for an instant that comes while the
// item's previous job is still pending or running.
type Overlap string

// Overlap policies.
const (
	// OverlapAllow materialises every instant. The default, as with cron.
	OverlapAllow Overlap = "allow"
	// OverlapSkip skips the item's instant (store.SkipOverlap).
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
	// Name identifies the schedule, its cursor and its dedup keys (key
	// name). Letters, digits and "-_.:@/".
	Name string
	// Cron is the expression as written (key cron); see cron.Expr.
	Cron string
	// Location is the zone of Cron: its CRON_TZ= prefix, else the key
	// timezone, else Scheduler.Timezone.
	Location *time.Location
	// Task names the task whose jobs the schedule makes (key task).
	Task string
	// Payload is the JSON object merged into every job's payload (key
	// payload); nil without the key. Items holds the merged payloads.
	Payload json.RawMessage
	// ForEach fans each instant out to one job per item (key for_each),
	// each entry a JSON object; nil without the key.
	ForEach []json.RawMessage
	// CatchUp is the policy for missed instants (key catch_up). Default:
	// cron.CatchUpLatest.
	CatchUp cron.CatchUp
	// CatchUpLimit is how many missed instants cron.CatchUpAll runs (key
	// catch_up_limit, 1 to MaxCatchUpLimit). Default: 100.
	CatchUpLimit int
	// Overlap is the overlap policy (key overlap). Default: OverlapAllow.
	Overlap Overlap
	// StartWithin raises a late alarm for an item's run not started this
	// long after its instant (key start_within, below Deadline). Default:
	// Scheduler.StartWithin; zero: no late alarms.
	StartWithin time.Duration
	// Deadline raises a missed alarm for an item's run not succeeded this
	// long after its instant (key deadline). Default: Scheduler.Deadline;
	// zero: no missed alarms.
	Deadline time.Duration
	// Notify names the tasks that get a job per alarm (key notify).
	// Default: Scheduler.Notify; an empty array: none.
	Notify []string
	// After names the upstream schedule whose instants this one follows
	// (key after): one job per upstream instant, once every job of that
	// instant has ended. A schedule has either Cron or After.
	After string
	// Require is what the upstream's jobs must achieve (key require):
	// "ended" (default) or "done".
	Require string
	// Renotify repeats an open incident's notice this often until it is
	// acknowledged or resolved (key renotify, at least MinRenotify).
	// Default: Scheduler.Renotify; zero ("0s"): no reminders.
	Renotify time.Duration

	expr  *cron.Expr
	items []Item
}

// Watched reports whether the schedule raises alarms: it has a
// start_within, a deadline or notify tasks.
func (s *Schedule) Watched() bool {
	return s.StartWithin > 0 || s.Deadline > 0 || len(s.Notify) > 0
}

// Expr returns the parsed cron expression.
func (s *Schedule) Expr() *cron.Expr { return s.expr }

// Items returns one Item per for_each entry, or one with ID "" without
// for_each. The caller must not modify it.
func (s *Schedule) Items() []Item { return s.items }

// Next is cron.Expr.Next.
func (s *Schedule) Next(after time.Time) time.Time { return s.expr.Next(after) }
