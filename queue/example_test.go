package queue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// A job is enqueued under a dedup key, run once by a pool, and a second
// enqueue with the same key is a no-op that returns the existing job.
func Example() {
	dir, _ := os.MkdirTemp("", "queue-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// The program picks the engine: here a SQLite file.
	engine, err := sqlite.Open(ctx, filepath.Join(dir, "jobs.db"), sqlite.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(engine, queue.Config{})
	defer q.Close()

	pool, _ := queue.NewPool(q, queue.PoolConfig{Workers: 2})
	ran := make(chan string)
	pool.Register("greet", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		ran <- string(j.Payload)
		return nil
	}), queue.TypeConfig{})

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- pool.Run(runCtx) }()

	first, _ := q.Enqueue(ctx, queue.NewJob{Type: "greet", Key: "greet|2026-03-01", Payload: []byte(`{"name":"acme"}`)})
	fmt.Println("ran with", <-ran)
	again, _ := q.Enqueue(ctx, queue.NewJob{Type: "greet", Key: "greet|2026-03-01"})
	fmt.Println("inserted again:", again.Inserted, "same job:", again.ID == first.ID)

	stop()
	<-done
	j, _ := q.JobByKey(ctx, "greet|2026-03-01")
	fmt.Println("state:", j.State, "attempts:", j.Attempt)
	// Output:
	// ran with {"name":"acme"}
	// inserted again: false same job: true
	// state: done attempts: 1
}

// A handler reports progress on OutputWriter: while the job runs its page
// shows the lines as they come, and they become the attempt's output.
func ExampleOutputWriter() {
	dir, _ := os.MkdirTemp("", "queue-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	engine, err := sqlite.Open(ctx, filepath.Join(dir, "jobs.db"), sqlite.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(engine, queue.Config{})
	defer q.Close()

	finished := make(chan queue.Finished, 1)
	pool, _ := queue.NewPool(q, queue.PoolConfig{Workers: 1, FinishedFunc: func(f queue.Finished) { finished <- f }})
	pool.Register("import", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		w := queue.OutputWriter(ctx)
		for _, part := range []string{"customers", "orders"} {
			fmt.Fprintf(w, "imported %s\n", part)
		}
		return nil
	}), queue.TypeConfig{})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- pool.Run(runCtx) }()

	e, _ := q.Enqueue(ctx, queue.NewJob{Type: "import"})
	<-finished
	stop()
	<-done
	as, _ := q.Attempts(ctx, e.ID)
	fmt.Print(as[0].Output)
	// Output:
	// imported customers
	// imported orders
}
