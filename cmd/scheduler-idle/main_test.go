package main

import (
	"os"
	"runtime"
	"testing"

	"scheduler/schedule"
)

func TestConfigIsValid(t *testing.T) {
	t.Parallel()
	cfg, err := schedule.Parse("schedules.toml", []byte(config(100)))
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
	s, err := read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.cpu <= 0 || s.rssKB <= 0 {
		t.Errorf("read = cpu %v, rss %d kB; want both positive", s.cpu, s.rssKB)
	}
}
