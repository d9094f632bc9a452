package postgres_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/internal/examplet"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
)

type Receipt struct {
	Order int `json:"order"`
}

func (Receipt) Kind() string { return "receipt" }

// An order and the job that mails its receipt commit together, or not at
// all: the program's own write and the enqueue share its pgx transaction,
// on the queue's database (its schema in search_path).
func ExampleEnqueueTx() {
	ctx := context.Background()
	dsn := examplet.PostgresURL() // the program's database URL
	s, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(s, queue.Config{})
	defer q.Close()

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY, item text)`); err != nil {
		fmt.Println(err)
		return
	}

	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orders (id, item) VALUES (42, 'book')`); err != nil {
			return err
		}
		nj, err := queue.MarshalArgs(Receipt{Order: 42}, queue.NewJob{Key: "receipt|42"})
		if err != nil {
			return err
		}
		_, err = postgres.EnqueueTx(ctx, tx, nj)
		return err
	})
	fmt.Println("committed:", err == nil)
	j, _ := q.JobByKey(ctx, "receipt|42")
	fmt.Println("job:", j.Type, j.State, string(j.Payload))

	// A transaction that fails enqueues nothing.
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := postgres.EnqueueTx(ctx, tx, queue.NewJob{Type: "receipt", Key: "receipt|43"}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO orders (id, item) VALUES (42, 'again')`)
		return err
	})
	_, lookup := q.JobByKey(ctx, "receipt|43")
	fmt.Println("failed:", err != nil, "enqueued:", lookup == nil)
	// Output:
	// committed: true
	// job: receipt pending {"order":42}
	// failed: true enqueued: false
}
