package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/scheduler-run/scheduler/cmd/scheduler/app"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/tasks"
)

// Thumbnail is the arguments of the Go task type "thumbnail": a
// [tasks.thumbnail] table with neither command nor url, its schedule's
// payload decoded into it.
type Thumbnail struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

func (Thumbnail) Kind() string { return "thumbnail" }

// thumbnails runs the Go task type "thumbnail" hourly, its jobs in
// jobs.db beside the file.
const thumbnails = `
[scheduler]
db = "jobs.db"

[tasks.thumbnail]
max_attempts = 3

[[schedule]]
name = "thumbnails"
cron = "0 * * * *"
task = "thumbnail"
payload = { image = "logo.png", width = 64 }
`

// daemonLog discards the daemon's log, and closes started when the daemon
// logs that it has started.
type daemonLog struct {
	once    sync.Once
	started chan struct{}
}

func newDaemonLog() *daemonLog { return &daemonLog{started: make(chan struct{})} }

func (l *daemonLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("scheduler started")) {
		l.once.Do(func() { close(l.started) })
	}
	return len(p), nil
}

// A team's own binary with a typed Go task type, as its main would run it:
// the daemon runs the jobs of "thumbnail" with the handler registered in
// Options.Tasks. Here the daemon runs in the background, an operator's
// -trigger enqueues a run, and SIGTERM stops the daemon once it has run.
func ExampleRun_typedTask() {
	dir, _ := os.MkdirTemp("", "app-typed-example")
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "schedules.toml")
	os.WriteFile(config, []byte(thumbnails), 0o600)

	ran := make(chan string, 1)
	opts := app.Options{Tasks: func(r *tasks.Registry) error {
		return tasks.Register(r, "", func(ctx context.Context, j *queue.TypedJob[Thumbnail]) (string, error) {
			ran <- fmt.Sprintf("%s at %dpx", j.Args.Image, j.Args.Width)
			return "resized", nil
		})
	}}

	ctx := context.Background()
	signals := make(chan os.Signal, 1)
	stopped := make(chan error, 1)
	log := newDaemonLog()
	go func() {
		stopped <- app.Run(ctx, []string{"-config", config}, io.Discard, log, signals, opts)
	}()
	select {
	case <-log.started: // its database exists: the operator's commands can run
	case err := <-stopped:
		fmt.Println("daemon:", err)
		return
	}
	err := app.Run(ctx, []string{"-config", config, "-trigger", "thumbnails"}, io.Discard, os.Stderr, nil, opts)
	fmt.Println("trigger:", app.ExitCode(err))
	fmt.Println("ran:", <-ran)
	signals <- syscall.SIGTERM
	fmt.Println("daemon:", app.ExitCode(<-stopped))
	// Output:
	// trigger: 0
	// ran: logo.png at 64px
	// daemon: 0
}
