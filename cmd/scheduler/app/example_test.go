package app_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/scheduler-run/scheduler/cmd/scheduler/app"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/tasks"
)

// A team's own binary: the scheduler command with a Go task type, "greet",
// registered next to the built-in command and http ones. Its main calls
// tasks.RunSubprocess first, then passes os.Args[1:] and the signals it
// asked for with signal.Notify (see docs/extending.md); here it runs
// -check on a config whose task "greet" has neither command nor url.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "app-example")
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "schedules.toml")
	os.WriteFile(config, []byte(`
[tasks.greet]
max_attempts = 3

[[schedule]]
name = "morning"
cron = "0 8 * * *"
task = "greet"
payload = { name = "acme" }
`), 0o600)

	greet := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		fmt.Println("hello", string(j.Payload))
		return nil
	})
	opts := app.Options{Tasks: func(r *tasks.Registry) error { return r.Register("greet", greet) }}

	err := app.Run(context.Background(), []string{"-check", "-config", config}, io.Discard, os.Stderr, nil, opts)
	fmt.Println("exit", app.ExitCode(err))

	// Without the registration the same file is rejected.
	var problems strings.Builder
	err = app.Run(context.Background(), []string{"-check", "-config", config}, io.Discard, &problems, nil, app.Options{})
	fmt.Println("exit without the Go handler", app.ExitCode(err))
	fmt.Println(strings.Contains(problems.String(), "no go handler registered"))
	// Output:
	// exit 0
	// exit without the Go handler 2
	// true
}
