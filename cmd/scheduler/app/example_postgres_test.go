package app_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/scheduler-run/scheduler/cmd/scheduler/app"
	"github.com/scheduler-run/scheduler/internal/examplet"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/tasks"
)

// The binary of ExampleRun_typedTask with its queue on PostgreSQL: -db
// (or db in [scheduler]) names the database's URL, for the daemon and the
// operator's commands alike.
func ExampleRun_typedTask_postgres() {
	dir, _ := os.MkdirTemp("", "app-typed-example")
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "schedules.toml")
	os.WriteFile(config, []byte(thumbnails), 0o600)
	url := examplet.PostgresURL() // the database's URL, postgres://...

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
		stopped <- app.Run(ctx, []string{"-config", config, "-db", url}, io.Discard, log, signals, opts)
	}()
	select {
	case <-log.started: // its database exists: the operator's commands can run
	case err := <-stopped:
		fmt.Println("daemon:", err)
		return
	}
	err := app.Run(ctx, []string{"-config", config, "-db", url, "-trigger", "thumbnails"}, io.Discard, os.Stderr, nil, opts)
	fmt.Println("trigger:", app.ExitCode(err))
	fmt.Println("ran:", <-ran)
	signals <- syscall.SIGTERM
	fmt.Println("daemon:", app.ExitCode(<-stopped))
	// Output:
	// trigger: 0
	// ran: logo.png at 64px
	// daemon: 0
}
