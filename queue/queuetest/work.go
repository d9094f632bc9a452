package queuetest

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// Start is where Work's default clock stands for a job that names no time:
// 1 March 2026, 12:00 UTC.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Config configures Work. Zero values select the defaults shown.
type Config struct {
	// Type is the policy of the job's type, as the program registers it:
	// Timeout, Backoff, MaxBackoff, GiveUpAfter, RedactFunc.
	Type queue.TypeConfig
	// Clock is the attempt's clock. Default: a clock.Fake at the job's
	// RunAt, else its ScheduledAt, else Start.
	Clock *clock.Fake
	// Context is the handler's context. Default: context.Background().
	Context context.Context
}

// Result is how one attempt ended (see queue.AttemptResult). Its RetryIn
// is the backoff without its random part: the longest the type's policy
// waits.
type Result = queue.AttemptResult

// Work runs one attempt of j with h as a Pool would, without a database
// (see queue.RunAttempt), and returns how it ended. j is copied, not
// changed; a zero Attempt is the first, a zero MaxAttempts
// queue.DefaultMaxAttempts, a zero CreatedAt the clock's now.
func Work(t TB, h queue.Handler, j *queue.Job, cfg Config) Result {
	t.Helper()
	if j == nil {
		t.Fatalf("work: no job")
	}
	c := *j
	if c.Attempt == 0 {
		c.Attempt = 1
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = queue.DefaultMaxAttempts
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.NewFake(firstNonZero(c.RunAt, c.ScheduledAt, Start))
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = cfg.Clock.Now()
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	return queue.RunAttempt(cfg.Context, h, &c, queue.AttemptConfig{
		Type:   cfg.Type,
		Clock:  cfg.Clock,
		Jitter: func(n time.Duration) time.Duration { return n - 1 },
	})
}

// Claimed returns the job a Pool would claim for nj on its first attempt,
// its payload the JSON of args (see queue.MarshalArgs) unless args is nil.
// A Key, MaxAttempts and Version left zero get defaults; args that do not
// marshal fail t.
func Claimed(t TB, args any, nj queue.NewJob) *queue.Job {
	t.Helper()
	if args != nil {
		var err error
		if nj, err = queue.MarshalArgs(args, nj); err != nil {
			t.Fatalf("claimed: %v", err)
		}
	}
	j := &queue.Job{
		ID: 1, Key: nj.Key, Type: nj.Type, Payload: nj.Payload, State: queue.StateRunning,
		Attempt: 1, MaxAttempts: nj.MaxAttempts, Priority: nj.Priority, Version: max(nj.Version, 1),
		RunAt: nj.RunAt, Schedule: nj.Schedule, Item: nj.Item, ScheduledAt: nj.ScheduledAt, AlarmKey: nj.AlarmKey,
	}
	if j.Key == "" {
		j.Key = "queuetest|" + j.Type
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = queue.DefaultMaxAttempts
	}
	if len(j.Payload) == 0 {
		j.Payload = []byte("{}")
	}
	return j
}

func firstNonZero(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
