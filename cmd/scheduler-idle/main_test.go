package main

import (
	"os"
	"runtime"
	"testing"
	"time"

	scheduleconfig "github.com/scheduler-run/scheduler/schedule/config"
)

func TestConfigIsValid(t *testing.T) {
	t.Parallel()
	cfg, err := scheduleconfig.Parse("schedules.toml", []byte(config(100)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cfg.Schedules); n != 100 {
		t.Errorf("%d schedules, want 100", n)
	}
}

func TestReadOwnProcess(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// A test binary that has just started may not have used one clock tick
	// of CPU yet: spend some until /proc counts it.
	deadline := time.Now().Add(3 * time.Minute) // failure deadline only
	for {
		s, err := read(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if s.rssKB <= 0 {
			t.Fatalf("read = rss %d kB, want positive", s.rssKB)
		}
		if s.cpu > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("read = cpu %v after 3 minutes of spinning, want positive", s.cpu)
		}
		spin()
	}
}

// spin burns a few milliseconds of CPU.
func spin() {
	x := 0
	for i := range 10_000_000 {
		x ^= i
	}
	sink = x
}

var sink int
