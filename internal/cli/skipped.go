package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// skipView is a skipped run, its instant in its schedule's zone.
type skipView struct {
	Schedule   string `json:"schedule"`
	Item       string `json:"item"` // "": every item of the instant
	Instant    string `json:"instant"`
	Reason     string `json:"reason"`
	RecordedAt string `json:"recorded_at"`
}

// viewSkip is s as the CLI shows it.
func (a *app) viewSkip(s store.Skip) skipView {
	return skipView{Schedule: s.Schedule, Item: s.Item, Instant: rfc3339(s.ScheduledAt, a.zone(s.Schedule)),
		Reason: string(s.Reason), RecordedAt: rfc3339(s.RecordedAt, time.UTC)}
}

// listSkipped is -skipped [NAME].
func (a *app) listSkipped(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	skips, err := q.ListSkips(ctx, a.o.sched, a.o.limit)
	if err != nil {
		return err
	}
	views := make([]skipView, 0, len(skips))
	for _, s := range skips {
		views = append(views, a.viewSkip(s))
	}
	if a.o.json {
		return writeJSON(a.stdout, views)
	}
	if len(views) == 0 {
		if a.o.sched != "" {
			fmt.Fprintf(a.stdout, "no skipped runs of %s are kept\n", a.o.sched)
		} else {
			fmt.Fprintln(a.stdout, "no skipped runs are kept")
		}
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "SCHEDULE\tITEM\tINSTANT\tREASON\tRECORDED\n")
	for _, v := range views {
		item := v.Item
		if item == "" {
			item = "(all)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", v.Schedule, item, v.Instant, v.Reason, v.RecordedAt)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(views) == a.o.limit {
		fmt.Fprintf(a.stdout, "%d newest shown; more may be kept (raise -limit, up to %d)\n", len(views), queue.MaxList)
	}
	return nil
}

// skipOfKey looks up the skip of the instant a key schedule|item|instant
// names, for -job KEY when no job has the key.
func (a *app) skipOfKey(ctx context.Context, q *queue.Client, key string) (store.Skip, bool, error) {
	first, last := strings.Index(key, "|"), strings.LastIndex(key, "|")
	if first < 0 || first == last {
		return store.Skip{}, false, nil
	}
	at, err := time.Parse(time.RFC3339, key[last+1:])
	if err != nil {
		return store.Skip{}, false, nil
	}
	s, err := q.SkipAt(ctx, key[:first], key[first+1:last], at)
	if errors.Is(err, queue.ErrNotFound) {
		return store.Skip{}, false, nil
	}
	return s, err == nil, err
}

// printSkippedJob is -job KEY for a key whose instant was skipped.
func (a *app) printSkippedJob(key string, s store.Skip) error {
	v := a.viewSkip(s)
	if a.o.json {
		return writeJSON(a.stdout, struct {
			Key     string   `json:"key"`
			Skipped skipView `json:"skipped"`
		}{key, v})
	}
	what := "every item"
	if v.Item != "" {
		what = "item " + v.Item
	}
	fmt.Fprintf(a.stdout, "no job has key %s: instant %s of schedule %s (%s) was skipped: %s (recorded %s)\n",
		key, v.Instant, v.Schedule, what, skipReasonText(store.SkipReason(v.Reason)), v.RecordedAt)
	return nil
}

// skipReasonText explains a skip reason.
func skipReasonText(reason store.SkipReason) string {
	switch reason {
	case store.SkipMisfire:
		return "misfire, missed while no daemon ran and dropped by catch_up"
	case store.SkipOverlap:
		return "overlap, the previous run of the item was still pending or running"
	case store.SkipPaused:
		return "paused, the schedule was paused"
	case store.SkipDST:
		return "dst, a wall time repeated by a daylight-saving change"
	}
	return string(reason)
}
