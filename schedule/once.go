package schedule

import (
	"context"
	"errors"
)

// RunOnce runs one pass of the beat at its clock's now, as Run does between
// its sleeps: every schedule's instants due since its cursor become jobs or
// skips, then the watched schedules' alarms are judged. It returns the error
// of the pass, without Run's retries. A schedule without a cursor gets one
// at now, so its first instant is the next after now.
//
// It is for tests and tools that drive a beat by hand with a fake clock
// (see package scheduletest); it fails while Run is active.
func (b *Beat) RunOnce(ctx context.Context) error {
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("beat: already running")
	}
	defer b.running.Store(false)
	now := b.clock.Now()
	rules, err := b.agree(ctx, now)
	if err != nil || !rules {
		return err
	}
	if _, err = b.pass(ctx, now); ctx.Err() != nil {
		return err
	}
	// After materialising, as Run does, so the alarms see the pass's jobs.
	_, aerr := b.alarmPass(ctx, now)
	return errors.Join(err, aerr)
}
