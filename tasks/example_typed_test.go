package tasks_test

import (
	"context"
	"fmt"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/tasks"
)

// Digest is the arguments of the Go task type "digest".
type Digest struct {
	Team  string `json:"team"`
	Since string `json:"since"`
}

func (Digest) Kind() string { return "digest" }

// A typed Go task type: registered under its arguments' Kind, it runs a
// [tasks.digest] table with neither command nor url, the job's payload
// decoded into Digest.
func ExampleRegister() {
	reg := tasks.NewRegistry(tasks.Config{})
	err := tasks.Register(reg, "", func(ctx context.Context, j *queue.TypedJob[Digest]) (string, error) {
		return fmt.Sprintf("digest for %s since %s", j.Args.Team, j.Args.Since), nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := reg.Handler("digest", tasks.Spec{})
	if err != nil {
		fmt.Println(err)
		return
	}
	j := &queue.Job{Type: "digest", Payload: []byte(`{"team":"ops","since":"2026-03-01"}`), Attempt: 1, MaxAttempts: 3}
	err = h.Work(context.Background(), j)
	fmt.Println(string(j.Output()), err)

	j = &queue.Job{Type: "digest", Payload: []byte(`{"team":["ops"]}`), Attempt: 1, MaxAttempts: 3}
	fmt.Println(h.Work(context.Background(), j))
	// Output:
	// digest for ops since 2026-03-01 <nil>
	// permanent: decode payload of job type "digest" into tasks_test.Digest: field "team": cannot use JSON array as string
}
