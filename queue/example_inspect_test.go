package queue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// Inspection: the jobs of a type, one job by its key, and the counts an
// operator's -status shows, read from the Client. The clock is fixed so the
// output is the same on every run.
func ExampleClient_List() {
	dir, _ := os.MkdirTemp("", "inspect-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	engine, err := sqlite.Open(ctx, filepath.Join(dir, "jobs.db"), sqlite.Config{Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(engine, queue.Config{})
	defer q.Close()

	for _, c := range []string{"acme", "globex"} {
		q.EnqueueArgs(ctx, Report{Customer: c, Format: "pdf"}, queue.NewJob{Key: "report|" + c})
	}
	q.Enqueue(ctx, queue.NewJob{Type: "cleanup", Key: "cleanup|1", RunAt: clk.Now().Add(time.Hour)})
	clk.Advance(90 * time.Second)

	reports, _ := q.List(ctx, queue.Filter{Type: "report"})
	for _, j := range reports {
		fmt.Println(j.ID, j.Key, j.State, string(j.Payload))
	}
	j, _ := q.JobByKey(ctx, "cleanup|1")
	fmt.Println(j.Key, j.State, "runs at", j.RunAt.Format(time.Kitchen))

	stats, _ := q.Stats(ctx)
	fmt.Println("pending:", stats.Total[queue.StatePending], "reports:", stats.Counts[queue.StatePending]["report"])
	fmt.Println("oldest ready waits", stats.OldestReady)

	_, err = q.Job(ctx, 99)
	fmt.Println(err, errors.Is(err, queue.ErrNotFound))
	// Output:
	// 2 report|globex pending {"customer":"globex","format":"pdf"}
	// 1 report|acme pending {"customer":"acme","format":"pdf"}
	// cleanup|1 pending runs at 1:00PM
	// pending: 3 reports: 2
	// oldest ready waits 1m30s
	// look up job 99: not found true
}
