package daemon

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestLimitLoad: a load sets a memory limit above what is in use and puts
// the one before back; with GOGC or GOMEMLIMIT set by the user it sets none.
func TestLimitLoad(t *testing.T) {
	data := []byte("[[schedule]]\n[[schedule]]\n")
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	restore := limitLoad(data)
	if got := debug.SetMemoryLimit(-1); got == before || got < goMemoryInUse() {
		t.Errorf("limit during a load = %d, want one above the %d in use", got, goMemoryInUse())
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit after the load = %d, want %d as before", got, before)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "off")
			if env == "GOMEMLIMIT" {
				t.Setenv(env, "1GiB")
			}
			restore := limitLoad(data)
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Errorf("limit during a load with %s set = %d, want %d as set", env, got, before)
			}
			restore()
		})
	}
}

// TestLimitFirstPass: the start's bound holds until the beat's first pass
// ends, or until the daemon stops first, and then the limit before is back.
func TestLimitFirstPass(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	restored := func() bool {
		for range 600 { // the restore runs on a goroutine: wait for it, a minute at most
			if debug.SetMemoryLimit(-1) == before {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	for _, stop := range []string{"first pass", "run ends"} {
		t.Run(stop, func(t *testing.T) {
			d := &Daemon{running: &config.Config{Schedules: make([]*config.Schedule, 1000)}, firstPass: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			end := d.limitFirstPass(ctx)
			defer end()
			if got := debug.SetMemoryLimit(-1); got == before {
				t.Fatalf("limit during the first pass = %d, want one set", got)
			}
			if stop == "first pass" {
				close(d.firstPass)
			} else {
				cancel()
			}
			if !restored() {
				t.Errorf("limit after the %s = %d, want %d as before", stop, debug.SetMemoryLimit(-1), before)
			}
		})
	}
}
