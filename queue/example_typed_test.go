package queue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// Report is a typed job's arguments: its JSON is the job's payload, and its
// Kind names the job type.
type Report struct {
	Customer string `json:"customer"`
	Format   string `json:"format"`
}

func (Report) Kind() string { return "report" }

// A typed handler gets the payload decoded into its own struct and returns
// the attempt's output; EnqueueArgs enqueues the struct.
func ExampleRegister() {
	dir, _ := os.MkdirTemp("", "typed-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	engine, err := sqlite.Open(ctx, filepath.Join(dir, "jobs.db"), sqlite.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(engine, queue.Config{})
	defer q.Close()

	pool, _ := queue.NewPool(q, queue.PoolConfig{Workers: 2})
	done := make(chan struct{})
	// The type is Report's Kind, "report".
	err = queue.Register(pool, "", func(ctx context.Context, j *queue.TypedJob[Report]) (string, error) {
		defer close(done)
		return fmt.Sprintf("%s report for %s", j.Args.Format, j.Args.Customer), nil
	}, queue.TypeConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- pool.Run(runCtx) }()

	res, err := q.EnqueueArgs(ctx, Report{Customer: "acme", Format: "pdf"}, queue.NewJob{Key: "report|acme|2026-03-01"})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-done
	stop()
	<-stopped

	j, _ := q.Job(ctx, res.ID)
	attempts, _ := q.Attempts(ctx, res.ID)
	fmt.Println(j.Type, j.State, string(j.Payload))
	fmt.Println("output:", attempts[0].Output)

	// A payload that does not fit Report is dead at once, saying why.
	bad, _ := q.Enqueue(ctx, queue.NewJob{Type: "report", Payload: []byte(`{"customer":42}`)})
	failed := make(chan struct{})
	pool, _ = queue.NewPool(q, queue.PoolConfig{Workers: 1, FinishedFunc: func(queue.Finished) { close(failed) }})
	queue.Register(pool, "", func(ctx context.Context, j *queue.TypedJob[Report]) (string, error) { return "", nil }, queue.TypeConfig{})
	runCtx, stop = context.WithCancel(ctx)
	go func() { stopped <- pool.Run(runCtx) }()
	<-failed
	stop()
	<-stopped
	j, _ = q.Job(ctx, bad.ID)
	fmt.Println(j.State+":", j.LastError)
	// Output:
	// report done {"customer":"acme","format":"pdf"}
	// output: pdf report for acme
	// dead: permanent: decode payload of job type "report" into queue_test.Report: field "customer": cannot use JSON number as string
}
