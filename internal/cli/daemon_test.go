package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/daemon"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/tasks"
)

// syncBuffer is a log sink that the daemon and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestForcedExitWaitsForThePool: a second SIGTERM cuts the grace short,
// but Run returns only once the pool has given the running job back; the
// queue is not closed under it, so nothing fails on a closed database.
func TestForcedExitWaitsForThePool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "schedules.toml")
	writeFile(t, config, `
[scheduler]
shutdown_grace = "5m"
[tasks.block]
max_attempts = 1
[[schedule]]
name = "b"
cron = "0 0 1 1 *"
task = "block"
`)
	started := make(chan struct{}, 1)
	var returned atomic.Bool
	block := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		started <- struct{}{}
		<-ctx.Done()
		returned.Store(true)
		return ctx.Err()
	})
	opts := Options{Tasks: func(r *tasks.Registry) error { return r.Register("block", block) }}
	args := []string{"-config", config}
	var logs syncBuffer
	signals := make(chan os.Signal, 2)
	exited := make(chan error, 1)
	go func() { exited <- Run(context.Background(), args, &logs, &logs, signals, opts) }()
	eventually(t, "daemon started", func() bool { return strings.Contains(logs.String(), "scheduler started") })
	var out bytes.Buffer
	if err := Run(context.Background(), append(args, "-trigger", "b"), &out, &out, nil, opts); err != nil {
		t.Fatalf("-trigger: %v\n%s", err, out.String())
	}
	<-started
	signals <- syscall.SIGTERM
	eventually(t, "pool stopping", func() bool { return strings.Contains(logs.String(), "pool stopping") })
	signals <- syscall.SIGTERM
	var err error
	select {
	case err = <-exited:
	case <-time.After(deadline):
		t.Fatalf("Run did not return after the second signal\n%s", logs.String())
	}
	if !errors.Is(err, daemon.ErrForced) {
		t.Errorf("Run = %v, want the forced exit", err)
	}
	if !returned.Load() {
		t.Fatal("Run returned while a job's handler still ran")
	}
	log := logs.String()
	for _, bad := range []string{"database is closed", "level=ERROR"} {
		if strings.Contains(log, bad) {
			t.Errorf("forced exit logged %q:\n%s", bad, log)
		}
	}
	q, err := engine.Open(context.Background(), filepath.Join(dir, "scheduler.db"), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	j, err := q.Job(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != queue.StatePending || j.Attempt != 0 {
		t.Errorf("job after a forced exit: %s attempt %d, want pending with its attempt given back", j.State, j.Attempt)
	}
}
