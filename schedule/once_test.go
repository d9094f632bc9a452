package schedule

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestRunOnce: one pass at the clock's now materialises what is due since
// the cursors, as Run's passes do; it refuses to run beside Run.
func TestRunOnce(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, `
[tasks.t]
command = ["true"]

[[schedule]]
name = "minutely"
cron = "* * * * *"
task = "t"
`)
	b, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if err := b.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := jobs(t, q, "minutely"), []string{"12:01:00", "12:02:00"}; !slices.Equal(got, want) {
		t.Errorf("jobs after two passes = %q, want %q", got, want)
	}

	r := startBeat(t, q, cfg, clk)
	if err := r.b.RunOnce(ctx); err == nil {
		t.Error("RunOnce beside Run succeeded")
	}
}
