package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// The charts' hours. What the jobs that ended in one hour add to the
// charts of all jobs (their ActivityAll groups, buckets counted in hours
// from the Unix epoch) is kept in a row per hour, so that a week's chart
// reads a few hundred rows instead of grouping every job of the week. The
// rows are a cache and every read checks them: ChartMarks fingerprints
// each hour from the jobs' index (one pass, no grouping), and an hour
// whose kept fingerprint differs (a dead job retried, jobs purged, a job
// finished late into a past hour) or is missing is grouped again from its
// rows and kept anew. The chart is thus always what the rows say now. The
// fingerprint is the sum over the hour's ended jobs of 1 and their offset
// in the hour: it misses only a change that keeps both, such as a job
// leaving the hour as another ends in it at the same instant; a retry or
// a purge takes a job out of its hour, and a job ends into a past hour
// only when a clock steps back.

const hourMS = int64(time.Hour / time.Millisecond)

// chartHoursKept is how long kept hours outlive a purge of their jobs: the
// longest chart's reach and a day, so that a short retention does not
// make every purge drop hours a chart still reads.
const chartHoursKept = 8 * 24 * time.Hour

// chartHoursBefore is the instant before which a purge at now of the jobs
// ended before before deletes kept hours.
func chartHoursBefore(before, now time.Time) time.Time {
	if kept := now.Add(-chartHoursKept); kept.Before(before) {
		return kept
	}
	return before
}

// endOfTime bounds the reads of jobs ended since an instant.
var endOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// activityGroup is one row of ActivityAll: jobs ended alike, their
// buckets counted from the read's origin. Kept hours hold them as JSON.
type activityGroup struct {
	Ended   int64 `json:"-"`
	State   State `json:"s"`
	Started int64 `json:"b"`
	Due     int64 `json:"d"`
	Class   int   `json:"c"`
	N       int   `json:"n"`
	Most    int64 `json:"m"`
	print   int64 // the group's part of its hour's fingerprint
}

func scanActivityGroup(r Row) (activityGroup, error) {
	var g activityGroup
	err := r.Scan(&g.Ended, &g.State, &g.Started, &g.Due, &g.Class, &g.N, &g.Most, &g.print)
	return g, err
}

// chartHours returns the groups of the jobs ended in the hours [lo, hi),
// from the kept hours that still match their jobs, and from the jobs for
// the others, which it keeps.
func (e *Base) chartHours(ctx context.Context, lo, hi time.Time) ([]activityGroup, error) {
	stale := map[int64]int64{} // hour -> fingerprint, for hours with jobs
	err := e.read(ctx, e.q.ChartMarks, lo, hourMS, hi).Each(func(r Row) (bool, error) {
		var at Time
		var print int64
		if err := r.Scan(&at, &print); err != nil {
			return false, err
		}
		if print != 0 {
			stale[at.UnixMilli()] = print
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart hours: %w", err)
	}
	var out []activityGroup
	err = e.read(ctx, e.q.ChartHours, lo, hi).Each(func(r Row) (bool, error) {
		var at Time
		var print int64
		var text string
		if err := r.Scan(&at, &print, &text); err != nil {
			return false, err
		}
		h := at.UnixMilli()
		var gs []activityGroup
		if stale[h] != print || json.Unmarshal([]byte(text), &gs) != nil {
			return true, nil // grouped again below
		}
		for _, g := range gs {
			g.Ended = h / hourMS
			out = append(out, g)
		}
		delete(stale, h)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart hours: %w", err)
	}
	fresh, err := e.groupHours(ctx, stale)
	if err != nil {
		return nil, fmt.Errorf("chart hours: %w", err)
	}
	for _, gs := range fresh {
		out = append(out, gs...)
	}
	return out, e.keepHours(ctx, fresh)
}

// groupHours reads the groups of the jobs ended in hours, one read per run
// of consecutive hours.
func (e *Base) groupHours(ctx context.Context, hours map[int64]int64) (map[int64][]activityGroup, error) {
	starts := make([]int64, 0, len(hours))
	for h := range hours {
		starts = append(starts, h)
	}
	slices.Sort(starts)
	fresh := map[int64][]activityGroup{}
	for i := 0; i < len(starts); {
		j := i + 1
		for j < len(starts) && starts[j] == starts[j-1]+hourMS {
			j++
		}
		lo, hi := time.UnixMilli(starts[i]), time.UnixMilli(starts[j-1]+hourMS)
		err := e.read(ctx, e.q.ActivityAll, time.UnixMilli(0), hourMS, lo, hi).Each(func(r Row) (bool, error) {
			g, err := scanActivityGroup(r)
			h := g.Ended * hourMS
			fresh[h] = append(fresh[h], g)
			return true, err
		})
		if err != nil {
			return nil, err
		}
		i = j
	}
	return fresh, nil
}

// keepHours keeps fresh's hours, in one transaction, where the store can.
func (e *Base) keepHours(ctx context.Context, fresh map[int64][]activityGroup) error {
	if e.q.PutChartHour == "" || len(fresh) == 0 {
		return nil
	}
	err := e.b.InTx(ctx, false, func(tx Tx) error {
		for h, gs := range fresh {
			var print int64
			for _, g := range gs {
				print += g.print
			}
			text, err := json.Marshal(gs)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, e.q.PutChartHour, time.UnixMilli(h), print, string(text)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keep chart hours: %w", err)
	}
	return nil
}
