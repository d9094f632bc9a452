package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// reportHandler makes a customer's report; globex's has no data.
var reportHandler = queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
	if j.Item == "globex" {
		return queue.Permanent(fmt.Errorf("no data"))
	}
	return nil
})

// summaryHandler sends what a fan-in's summary job was given: its own
// payload's fields and the items of the jobs that ended done and dead.
func summaryHandler(summary chan<- string) queue.Handler {
	return queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		var p struct {
			Night      string
			Done, Dead []string
		}
		_ = json.Unmarshal(j.Payload, &p)
		summary <- fmt.Sprintf("night %s: done %v, dead %v", p.Night, p.Done, p.Dead)
		return nil
	})
}

// A fan-in enqueues a report per customer and a summary that runs once,
// when the last report has ended, with the outcome of each.
func ExampleClient_EnqueueFanIn() {
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

	pool, _ := queue.NewPool(q, queue.PoolConfig{Workers: 2})
	pool.Register("report", reportHandler, queue.TypeConfig{})
	summary := make(chan string)
	pool.Register("summary", summaryHandler(summary), queue.TypeConfig{})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- pool.Run(runCtx) }()

	f := queue.NewFanIn{
		Key:  "reports|2026-03-01",
		Then: queue.NewJob{Type: "summary", Payload: []byte(`{"night":"2026-03-01"}`)},
	}
	for _, c := range []string{"acme", "globex", "initech"} {
		f.Jobs = append(f.Jobs, queue.NewJob{Type: "report", Key: "report|" + c + "|2026-03-01", Item: c})
	}
	if _, err := q.EnqueueFanIn(ctx, f); err != nil {
		fmt.Println(err)
	} else {
		fmt.Println(<-summary)
	}
	stop()
	<-done
	// Output:
	// night 2026-03-01: done [acme initech], dead [globex]
}
