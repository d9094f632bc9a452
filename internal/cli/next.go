package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// showNext is -next: a schedule's runs after now, or at or after -from.
// "@every" runs count from the schedule's cursor, as the beat counts.
func (a *app) showNext(ctx context.Context) error {
	if f, ok := a.cfg.Follower(a.o.next); ok {
		return a.showNextAfter(ctx, f)
	}
	s, err := a.schedule(a.o.next)
	if err != nil {
		return err
	}
	opts, err := a.nextOptions(ctx, s)
	if err != nil {
		return err
	}
	runs, err := schedule.NextRuns(a.cfg, s.Name, a.o.n, opts)
	if err != nil {
		return err
	}
	out := make([]nextView, len(runs))
	for i, r := range runs {
		out[i] = nextView{At: instant(r.At, s.Location), DST: r.DST, Note: r.Note}
	}
	return a.printNext(out)
}

func (a *app) printNext(out []nextView) error {
	if a.o.json {
		return writeJSON(a.stdout, out)
	}
	w := bufio.NewWriter(a.stdout)
	for _, r := range out {
		switch {
		case r.Waiting != "":
			fmt.Fprintf(w, "%s  %s\n", r.At, r.Waiting)
		case r.DST != "":
			fmt.Fprintf(w, "%s  %s: %s\n", r.At, r.DST, r.Note)
		default:
			fmt.Fprintln(w, r.At)
		}
	}
	return w.Flush()
}

// showNextAfter is -next of a schedule with after: the upstream instant it
// waits on, if any, then the next instants of the schedule at the head of
// its chain, each of which it follows once their jobs have ended.
func (a *app) showNextAfter(ctx context.Context, f *config.Schedule) error {
	origin := a.cfg.Origin(f)
	opts, err := a.nextOptions(ctx, origin)
	if err != nil {
		return err
	}
	runs, err := schedule.NextRuns(a.cfg, origin.Name, a.o.n, opts)
	if err != nil {
		return err
	}
	var out []nextView
	if _, err := os.Stat(a.db); err == nil || isDSN(a.db) {
		q, err := a.openQueue(ctx, false)
		if err != nil {
			return err
		}
		wait, err := fanInWait(ctx, q, f.Name, f.Location)
		q.Close()
		if err != nil {
			return err
		}
		if wait != nil {
			out = append(out, nextView{At: wait.Instant, Waiting: wait.String()})
		}
	}
	for _, r := range runs {
		out = append(out, nextView{At: instant(r.At, f.Location), Note: "after " + origin.Name})
	}
	return a.printNext(out)
}

// nextOptions is where -next counts from: now or -from, and the cursor
// when there is one. What it cannot know it says on stderr.
func (a *app) nextOptions(ctx context.Context, s *config.Schedule) (schedule.NextOptions, error) {
	opts := schedule.NextOptions{From: a.clock.Now()}
	counted := "now"
	if a.o.from != "" {
		from, err := parseFrom(a.o.from, s.Location)
		if err != nil {
			return opts, err
		}
		opts.From = from.Add(-time.Nanosecond) // runs at or after -from
		counted = "-from"
	}
	if _, err := os.Stat(a.db); err != nil && !isDSN(a.db) {
		if s.Expr().Every() > 0 {
			fmt.Fprintf(a.stderr, "no database at %s: @every runs are counted from %s, not from the schedule's cursor\n", a.dbPath, counted)
		}
	} else {
		q, err := a.openQueue(ctx, false)
		if err != nil {
			return opts, err
		}
		cursors, err := q.Cursors(ctx)
		if err == nil {
			err = a.warnConfigDiffers(ctx, q)
		}
		q.Close()
		if err != nil {
			return opts, err
		}
		cur, ok := cursors[s.Name]
		switch {
		case !ok && s.Expr().Every() > 0:
			fmt.Fprintf(a.stderr, "schedule %s has not started in %s: @every runs are counted from %s; the daemon counts them from when it starts the schedule\n", s.Name, a.dbPath, counted)
		case ok:
			opts.Cursor = cur.At
			if a.o.from == "" && cur.At.After(opts.From) {
				opts.From = cur.At // the beat runs nothing at or before its cursor
			}
			if cur.Paused {
				fmt.Fprintf(a.stderr, "schedule %s is paused: these runs happen only after -resume\n", s.Name)
			}
		}
	}
	if s.Expr().Every() > 0 && opts.Cursor.IsZero() && a.o.from != "" {
		// Counted from -from itself, as the beat counts from a new cursor.
		opts.From = opts.From.Add(time.Nanosecond)
	}
	return opts, nil
}

// warnConfigDiffers warns when the file -next reads changed since the
// daemon loaded it, or is not the daemon's file. useLastGood has already
// warned of a broken or missing file.
func (a *app) warnConfigDiffers(ctx context.Context, q *queue.Client) error {
	r, err := a.configStatus(ctx, q)
	if err != nil || r == nil {
		return err
	}
	if r.State == configChanged || r.State == configOther {
		fmt.Fprintf(a.stderr, "config: %s; these runs are of %s\n", r, a.o.config)
	}
	return nil
}

// nextView is a run as -next -json prints it.
type nextView struct {
	At   string `json:"at"`
	DST  string `json:"dst,omitempty"`  // "moved" or "folded"
	Note string `json:"note,omitempty"` // what the daylight-saving rule did, or whose instant a schedule with after follows
	// Waiting is how many of the instant's jobs ended, for a schedule with
	// after waiting on it.
	Waiting string `json:"waiting,omitempty"`
}

// parseFrom reads -next's -from: RFC 3339, or YYYY-MM-DD[THH:MM[:SS]] in loc.
func parseFrom(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("-from %q: want RFC 3339 (2026-11-01T00:00:00-04:00), or 2026-11-01 or 2026-11-01T01:30 in the schedule's zone (%s)", s, loc)
}
