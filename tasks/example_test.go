package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/tasks"
)

// A team's own binary registers its Go task types next to the built-in
// command and HTTP handlers.
func Example() {
	reg := tasks.NewRegistry(tasks.Config{})
	err := reg.Register("greet", queue.HandlerFunc(func(ctx context.Context, job *queue.Job) error {
		var p struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(job.Payload, &p); err != nil {
			return queue.Permanent(fmt.Errorf("decode payload: %w", err))
		}
		fmt.Printf("hello, %s\n", p.Name)
		return nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("go handlers:", reg.Names())

	// [tasks.greet] has neither command nor url: the Go handler runs it.
	greet, err := reg.Handler("greet", tasks.Spec{})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = greet.Work(context.Background(), &queue.Job{ID: 1, Type: "greet", Payload: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println("greet:", err)

	// [tasks.echo] command = ["echo", "report for {{.day}}"]
	echo, err := reg.Handler("echo", tasks.Spec{Command: []string{"echo", "report for {{.day}}"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	payload := json.RawMessage(`{"day":"2024-05-01"}`)
	args, err := echo.(*tasks.Command).Args(payload)
	fmt.Printf("argv: %q %v\n", args, err)
	err = echo.Work(context.Background(), &queue.Job{ID: 2, Type: "echo", Payload: payload, Attempt: 1})
	fmt.Println("echo:", err)

	_, err = reg.Handler("missing", tasks.Spec{})
	fmt.Println(err)
	// Output:
	// go handlers: [greet]
	// hello, Ada
	// greet: <nil>
	// argv: ["echo" "report for 2024-05-01"] <nil>
	// echo: <nil>
	// task "missing": neither command nor url given and no go handler registered
}
