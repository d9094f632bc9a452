package store

import (
	"errors"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestLeasesHoldForwardSteps: a forward step is held until the latest
// lease written before it has ended by the clock as it stood; steps add
// up; a backward step holds nothing; with no lease running nothing is
// held; a step whose latest lease could not be read is held at the next
// call.
func TestLeasesHoldForwardSteps(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	l := NewLeases(clk)
	latest := t0.Add(time.Minute) // the latest lease, written before the steps
	calls := 0
	var fail error
	read := func() (time.Time, error) {
		calls++
		return latest, fail
	}
	held := func(what string, want time.Duration) {
		t.Helper()
		got, err := l.Margin(clk.Now(), read)
		if err != nil || got != want {
			t.Fatalf("%s: Margin = %v, %v; want %v", what, got, err, want)
		}
	}
	held("no step", 0)
	if calls != 0 {
		t.Fatalf("the latest lease was read %d times without a step", calls)
	}
	clk.Step(time.Hour)
	clk.Step(-time.Hour) // undone before the next reading: no step
	clk.Step(90 * time.Second)
	held("90 s forwards", 90*time.Second)
	clk.Step(10 * time.Second)
	held("10 s more", 100*time.Second)
	clk.Advance(time.Minute)
	held("while the lease has not ended by the clock before the steps", 100*time.Second)
	clk.Advance(time.Millisecond)
	held("once it has", 0)
	clk.Step(-time.Hour)
	held("a backward step", 0)

	fail = errors.New("busy")
	clk.Step(30 * time.Second)
	if _, err := l.Margin(clk.Now(), read); !errors.Is(err, fail) {
		t.Fatalf("Margin with a failing read = %v, want its error", err)
	}
	fail, latest = nil, clk.Now().Add(-10*time.Second) // the step left it 20 s
	held("the step owed, read again", 30*time.Second)
	clk.Advance(20*time.Second + time.Millisecond)
	held("once that lease has ended", 0)

	latest = time.Time{}
	clk.Step(time.Hour)
	held("no lease running", 0)
}
