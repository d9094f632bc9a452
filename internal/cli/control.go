package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// triggerRun is -trigger: a run of a schedule now, one job per fan-out
// item (or the one -item names), with -payload merged over its payload.
func (a *app) triggerRun(ctx context.Context) error {
	if _, err := a.schedule(a.o.trigger); err != nil {
		return err
	}
	var payload json.RawMessage
	if a.o.payload != "" {
		text, err := a.payloadArg()
		if err != nil {
			return err
		}
		if err := schedule.CheckTriggerPayload(text); err != nil {
			return usagef("-payload: %v", err)
		}
		payload = text
	}
	opts := schedule.TriggerOptions{Payload: payload, Key: a.o.key, Item: a.o.item, Now: a.clock.Now()}
	if err := schedule.CheckTrigger(a.cfg, a.o.trigger, opts); err != nil {
		if errors.Is(err, schedule.ErrUnknownItem) || errors.Is(err, schedule.ErrPayloadSetsItemKey) {
			return usagef("%v", err)
		}
		return err
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	opts.Now = q.Clock().Now() // the store's clock: on PostgreSQL, the server's
	res, err := schedule.Trigger(ctx, q, a.cfg, a.o.trigger, opts)
	if err != nil {
		return err
	}
	a.printTriggered(res)
	return a.warnNoDaemon(ctx, q)
}

// printTriggered prints a line per job enqueued; when -key was used
// before, it says so and lists the jobs that hold it.
func (a *app) printTriggered(res []queue.Enqueued) {
	var used []queue.Enqueued
	for _, r := range res {
		if r.Inserted {
			fmt.Fprintf(a.stdout, "enqueued job %d (key %s)\n", r.ID, r.Key)
		} else {
			used = append(used, r)
		}
	}
	if len(used) == 0 {
		return
	}
	what := "nothing enqueued"
	if len(used) < len(res) {
		what = fmt.Sprintf("%d of %d items not enqueued again", len(used), len(res))
	}
	fmt.Fprintf(a.stdout, "trigger key %q was used before: %s\n", a.o.key, what)
	for _, r := range used {
		if r.Purged {
			fmt.Fprintf(a.stdout, "  key %s (its job was purged)\n", r.Key)
		} else {
			fmt.Fprintf(a.stdout, "  job %d (key %s)\n", r.ID, r.Key)
		}
	}
}

// warnNoDaemon warns when no daemon is alive to run what -trigger queued.
// The trigger is committed: a failure to look is a warning too.
func (a *app) warnNoDaemon(ctx context.Context, q *queue.Client) error {
	ds, err := q.Pools(ctx)
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: queued; could not tell whether a daemon is running: %v\n", err)
		return nil
	}
	now := q.Clock().Now()
	for _, d := range ds {
		if d.Alive(now) {
			return nil
		}
	}
	if len(ds) == 0 {
		var loadedAt time.Time
		stored, err := q.LastConfig(ctx)
		switch {
		case err == nil:
			loadedAt = stored.LoadedAt
		case !errors.Is(err, queue.ErrNotFound):
			fmt.Fprintf(a.stderr, "warning: queued; no daemon is running on %s; it will run when one starts (what the last one did is unknown: %v)\n", a.dbPath, err)
			return nil
		}
		fmt.Fprintf(a.stderr, "warning: queued; no daemon is running on %s (%s); it will run when one starts\n", a.dbPath, noDaemonSeen(loadedAt, now))
		return nil
	}
	fmt.Fprintf(a.stderr, "warning: queued; no daemon has been seen since %s (pid %d on %s); it will run when one starts\n",
		rfc3339(ds[0].LastSeen, time.UTC), ds[0].PID, ds[0].Host)
	return nil
}

// setPaused is -pause and -resume of schedule name.
func (a *app) setPaused(ctx context.Context, name string, paused bool) error {
	if _, err := a.schedule(name); err != nil {
		return err
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	if paused {
		was, err := schedule.PauseSettled(ctx, q, a.cfg, name)
		if err != nil {
			return err
		}
		if was {
			fmt.Fprintf(a.stdout, "%s was already paused: nothing to do\n", name)
		} else {
			fmt.Fprintf(a.stdout, "paused %s\n", name)
		}
		return nil
	}
	r, err := schedule.ResumeSettled(ctx, q, a.cfg, name, q.Clock().Now(), a.o.skip)
	if err != nil {
		return err
	}
	a.printResumed(name, r)
	return nil
}

// printResumed prints what -resume did.
func (a *app) printResumed(name string, r schedule.Resumed) {
	switch {
	case !r.WasPaused:
		fmt.Fprintf(a.stdout, "%s was not paused: nothing to do\n", name)
	case a.o.skip:
		fmt.Fprintf(a.stdout, "resumed %s: %d missed instants skipped (see -skipped %s)\n", name, r.Skipped, name)
	default:
		fmt.Fprintf(a.stdout, "resumed %s: missed instants follow catch_up: %d enqueued, %d skipped (see -skipped %s)\n", name, r.Runs, r.Skipped, name)
	}
}

// retryDead is -retry: a dead job, or every one, made pending again.
func (a *app) retryDead(ctx context.Context) error {
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	if a.o.retry == "all" {
		n, err := q.RetryAllDead(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%d dead jobs made pending\n", n)
		return nil
	}
	j, err := a.findJob(ctx, q, a.o.retry)
	if err != nil {
		return err
	}
	if err := q.Retry(ctx, j.ID); err != nil {
		if errors.Is(err, queue.ErrNotFound) {
			return retryRefused(j.ID, j.Key, a.stateNow(ctx, q, j))
		}
		return err
	}
	if j.State == queue.StateDiscarded {
		fmt.Fprintf(a.stdout, "job %d (%s) made pending: its discard by %s is taken back\n", j.ID, j.Key, j.DiscardedBy)
		return nil
	}
	fmt.Fprintf(a.stdout, "job %d (%s) made pending\n", j.ID, j.Key)
	return nil
}

// retryRefused is the error of a retry of a job in state st.
func retryRefused(id int64, key string, st queue.State) error {
	return fmt.Errorf("job %d (%s) is %s, not dead: only a dead or discarded job can be retried", id, key, st)
}

// stateNow is j's state as it is now: another operator may have changed it
// since it was read. On a failure to look, it is the state read before.
func (a *app) stateNow(ctx context.Context, q *queue.Client, j *queue.Job) queue.State {
	if now, err := q.Job(ctx, j.ID); err == nil {
		return now.State
	}
	return j.State
}

// discardDead is -discard: a dead job, every one, or every one of a
// schedule, ended as discarded.
func (a *app) discardDead(ctx context.Context) error {
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	by := operator("discard")
	if a.o.discard == "all" {
		d, err := q.Discard(ctx, queue.Discard{Schedule: a.o.sched, By: by})
		if err != nil {
			return err
		}
		of := ""
		if a.o.sched != "" {
			of = " of " + a.o.sched
		}
		if len(d.IDs) == 0 {
			fmt.Fprintf(a.stdout, "no dead jobs%s: nothing to discard\n", of)
			return nil
		}
		fmt.Fprintf(a.stdout, "%s%s discarded\n", plural(len(d.IDs), "dead job"), of)
		return nil
	}
	j, err := a.findJob(ctx, q, a.o.discard)
	if err != nil {
		return err
	}
	d, err := q.Discard(ctx, queue.Discard{IDs: []int64{j.ID}, By: by})
	if err != nil {
		return err
	}
	if len(d.Refused) > 0 {
		return fmt.Errorf("job %d (%s) is %s, not dead: only a dead job can be discarded", j.ID, j.Key, d.Refused[0].State)
	}
	fmt.Fprintf(a.stdout, "job %d (%s) discarded\n", j.ID, j.Key)
	return nil
}

// backfillRange is -backfill: a schedule's instants between -from and
// -to, enqueued unless they already were.
func (a *app) backfillRange(ctx context.Context) error {
	s, err := a.schedule(a.o.backfill)
	if err != nil {
		return err
	}
	from, _, err := parseBound("-from", a.o.from, s.Location, false)
	if err != nil {
		return err
	}
	to, day, err := parseBound("-to", a.o.to, s.Location, true)
	if err != nil {
		return err
	}
	if to.Before(from) {
		return usagef("-to %s is before -from %s", rfc3339(to, s.Location), rfc3339(from, s.Location))
	}
	now := a.clock.Now()
	if to.After(now) {
		if !day || from.After(now) {
			return usagef("-to %s is in the future: backfill is for the past", a.o.to)
		}
		// A whole day that is today: its instants up to now.
		to = now
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	res, err := schedule.Backfill(ctx, q, a.cfg, a.o.backfill, from, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "backfill %s from %s to %s (%s)\n", s.Name, rfc3339(from, s.Location), rfc3339(to, s.Location), s.Location)
	inserted := printBackfill(a.stdout, res, s.Location)
	fmt.Fprintf(a.stdout, "%d runs in range: %d enqueued, %d already existed\n", len(res), inserted, len(res)-inserted)
	return nil
}

// printBackfill prints each instant of res in loc with what became of its
// jobs, and returns how many were enqueued.
func printBackfill(out io.Writer, res []queue.Enqueued, loc *time.Location) (inserted int) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for i := 0; i < len(res); {
		// The jobs of one instant, one per item, are adjacent.
		at := res[i].Key[strings.LastIndex(res[i].Key, "|")+1:]
		n, fresh := 0, 0
		for ; i < len(res) && strings.HasSuffix(res[i].Key, "|"+at); i++ {
			n++
			if res[i].Inserted {
				fresh++
			}
		}
		inserted += fresh
		shown := at
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			shown = rfc3339(t, loc)
		}
		what := "enqueued"
		switch {
		case fresh == 0:
			what = "already existed"
		case fresh < n:
			what = fmt.Sprintf("%d enqueued, %d already existed", fresh, n-fresh)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", shown, plural(n, "job"), what)
	}
	w.Flush()
	return inserted
}

// parseBound reads -backfill's -from or -to: RFC 3339, a wall time in loc
// (YYYY-MM-DDTHH:MM[:SS]), or a date in loc, which is the day's start, or
// its inclusive end when end is set. day reports a date.
func parseBound(flag, s string, loc *time.Location, end bool) (t time.Time, day bool, err error) {
	if t, err := parseInstant(s, loc); err == nil {
		return t, false, nil
	}
	d, err := time.ParseInLocation("2006-01-02", s, loc)
	if err != nil {
		return time.Time{}, false, usagef("%s %q: want a date (2026-11-23) or a wall time (2026-11-23T03:00) in the schedule's zone (%s), or RFC 3339 (2026-11-23T03:00:00+03:00)", flag, s, loc)
	}
	if end {
		// The day's last instant.
		next := time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc)
		return next.Add(-time.Nanosecond), true, nil
	}
	return d, true, nil
}

// cancelMargin is how long -cancel waits beyond the kill grace, for the
// daemon to notice the request (WatchInterval) and record the end.
const cancelMargin = 5 * time.Second

// cancelPoll is how often -cancel looks at a running job it asked to stop.
const cancelPoll = 100 * time.Millisecond

// cancelJob is -cancel. A pending job is cancelled at once. For a running
// one the request is recorded and its daemon stops it; -cancel waits up to
// the kill grace plus cancelMargin.
func (a *app) cancelJob(ctx context.Context) error {
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	j, err := a.findJob(ctx, q, a.o.cancel)
	if err != nil {
		return err
	}
	st, err := q.RequestCancel(ctx, j.ID, operator("cancel"))
	if err != nil {
		return err
	}
	switch st {
	case queue.StatePending:
		fmt.Fprintf(a.stdout, "job %d (%s) cancelled\n", j.ID, j.Key)
		return nil
	case queue.StateCancelled:
		fmt.Fprintf(a.stdout, "job %d (%s) was already cancelled\n", j.ID, j.Key)
		return nil
	case queue.StateRunning:
	default:
		return fmt.Errorf("job %d (%s) is %s: only a pending or running job can be cancelled", j.ID, j.Key, st)
	}

	wait := a.killGrace(j.Type) + cancelMargin
	fmt.Fprintf(a.stderr, "job %d (%s) is running on %s: cancel requested, waiting up to %s for it to stop\n", j.ID, j.Key, j.Owner, wait)
	end := a.clock.Monotonic() + wait
	// The request is committed: whatever stops the wait, it stays.
	stopped := func(err error) error {
		return fmt.Errorf("job %d (%s): cancel requested, stopped waiting for its daemon to stop it: %w", j.ID, j.Key, err)
	}
	for {
		now, err := q.Job(ctx, j.ID)
		if err != nil {
			return stopped(err)
		}
		switch now.State {
		case queue.StateCancelled:
			fmt.Fprintf(a.stdout, "job %d (%s) cancelled: its daemon stopped it\n", j.ID, j.Key)
			return nil
		case queue.StateRunning:
		default:
			return fmt.Errorf("job %d (%s) ended %s before its daemon stopped it", j.ID, j.Key, now.State)
		}
		if a.clock.Monotonic() >= end {
			return fmt.Errorf("job %d (%s) still running on %s after %s: the cancel is requested and stays so; it stops when that daemon notices, or ends cancelled once its lease (until %s) expires and is reclaimed",
				j.ID, j.Key, now.Owner, wait, rfc3339(now.LeaseUntil, time.UTC))
		}
		select {
		case <-ctx.Done():
			return stopped(context.Cause(ctx))
		case <-a.clock.After(cancelPoll):
		}
	}
}

// killGrace is the kill grace of task jobType, or the default.
func (a *app) killGrace(jobType string) time.Duration {
	if a.cfg != nil {
		if t, ok := a.cfg.Tasks[jobType]; ok && t.KillGrace > 0 {
			return t.KillGrace
		}
	}
	return config.DefaultKillGrace
}

// operator names who runs -cancel or -discard (mode), for the job's record.
func operator(mode string) string {
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s (scheduler -%s, pid %d)", name, host, mode, os.Getpid())
}
