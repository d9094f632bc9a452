package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/examplet"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
)

// The PostgreSQL twins of the package's examples: the program opens the
// engine with its database's URL, and then makes the same calls, with the
// same output.

// runPool runs pool until the returned stop is called; stop waits for Run
// to return.
func runPool(pool *queue.Pool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- pool.Run(ctx) }()
	return func() { cancel(); <-done }
}

// Enqueue and dedup on PostgreSQL.
func Example_postgres() {
	ctx := context.Background()
	url := examplet.PostgresURL() // the program's database URL, postgres://...
	engine, err := postgres.Open(ctx, url, postgres.Config{})
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
	stop := runPool(pool)

	first, _ := q.Enqueue(ctx, queue.NewJob{Type: "greet", Key: "greet|2026-03-01", Payload: []byte(`{"name":"acme"}`)})
	fmt.Println("ran with", <-ran)
	again, _ := q.Enqueue(ctx, queue.NewJob{Type: "greet", Key: "greet|2026-03-01"})
	fmt.Println("inserted again:", again.Inserted, "same job:", again.ID == first.ID)

	stop()
	j, _ := q.JobByKey(ctx, "greet|2026-03-01")
	fmt.Println("state:", j.State, "attempts:", j.Attempt)
	// Output:
	// ran with {"name":"acme"}
	// inserted again: false same job: true
	// state: done attempts: 1
}

// Inspection on PostgreSQL. LocalClock makes the engine decide with the
// fixed clock as it is, rather than correct it to the server's.
func ExampleClient_List_postgres() {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	engine, err := postgres.Open(ctx, examplet.PostgresURL(), postgres.Config{Clock: clk, LocalClock: true})
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

// A typed handler on PostgreSQL, and a payload that does not fit it.
func ExampleRegister_postgres() {
	ctx := context.Background()
	engine, err := postgres.Open(ctx, examplet.PostgresURL(), postgres.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(engine, queue.Config{})
	defer q.Close()

	finished := make(chan struct{}, 2)
	pool, _ := queue.NewPool(q, queue.PoolConfig{Workers: 2, FinishedFunc: func(queue.Finished) { finished <- struct{}{} }})
	err = queue.Register(pool, "", func(ctx context.Context, j *queue.TypedJob[Report]) (string, error) {
		return fmt.Sprintf("%s report for %s", j.Args.Format, j.Args.Customer), nil
	}, queue.TypeConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	stop := runPool(pool)
	res, _ := q.EnqueueArgs(ctx, Report{Customer: "acme", Format: "pdf"}, queue.NewJob{Key: "report|acme|2026-03-01"})
	bad, _ := q.Enqueue(ctx, queue.NewJob{Type: "report", Payload: []byte(`{"customer":42}`)})
	<-finished
	<-finished
	stop()

	j, _ := q.Job(ctx, res.ID)
	attempts, _ := q.Attempts(ctx, res.ID)
	fmt.Println(j.Type, j.State, string(j.Payload))
	fmt.Println("output:", attempts[0].Output)
	j, _ = q.Job(ctx, bad.ID)
	fmt.Println(j.State+":", j.LastError)
	// Output:
	// report done {"customer":"acme","format":"pdf"}
	// output: pdf report for acme
	// dead: permanent: decode payload of job type "report" into queue_test.Report: field "customer": cannot use JSON number as string
}

// A fan-in on PostgreSQL, with the handlers of ExampleClient_EnqueueFanIn.
func ExampleClient_EnqueueFanIn_postgres() {
	ctx := context.Background()
	engine, err := postgres.Open(ctx, examplet.PostgresURL(), postgres.Config{})
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
	stop := runPool(pool)
	defer stop()

	f := queue.NewFanIn{
		Key:  "reports|2026-03-01",
		Then: queue.NewJob{Type: "summary", Payload: []byte(`{"night":"2026-03-01"}`)},
	}
	for _, c := range []string{"acme", "globex", "initech"} {
		f.Jobs = append(f.Jobs, queue.NewJob{Type: "report", Key: "report|" + c + "|2026-03-01", Item: c})
	}
	if _, err := q.EnqueueFanIn(ctx, f); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-summary)
	// Output:
	// night 2026-03-01: done [acme initech], dead [globex]
}
