package cli

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// cancelMargin is what -cancel waits for a running job beyond its kill
// grace: for its daemon to notice the request (its WatchInterval) and record
// the end.
const cancelMargin = 5 * time.Second

// cancelPoll is how often -cancel looks at a running job it asked to stop.
const cancelPoll = 100 * time.Millisecond

// cancelJob cancels the job -cancel names, by id or key. A pending job is
// cancelled at once. For a running one the request is recorded and the
// daemon holding the job stops it; -cancel waits for that, up to the task's
// kill grace and cancelMargin.
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
	st, err := q.RequestCancel(ctx, j.ID, canceller())
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

// killGrace is the kill grace of the task jobType, as the daemon's config
// says, or the default when the config is not at hand.
func (a *app) killGrace(jobType string) time.Duration {
	if a.cfg != nil {
		if t, ok := a.cfg.Tasks[jobType]; ok && t.KillGrace > 0 {
			return t.KillGrace
		}
	}
	return config.DefaultKillGrace
}

// canceller names who runs -cancel, for the job's record: user@host and
// the process id.
func canceller() string {
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s (scheduler -cancel, pid %d)", name, host, os.Getpid())
}
