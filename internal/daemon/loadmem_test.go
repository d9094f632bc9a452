package daemon

import (
	"runtime/debug"
	"testing"
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
