package queuetest_test

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/internal/examplet"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/queuetest"
)

// placeOrderPostgres is placeOrder on PostgreSQL: the order and its
// receipt's job in the program's pgx transaction.
func placeOrderPostgres(ctx context.Context, tx pgx.Tx, order int, email string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO orders (id, email) VALUES ($1, $2)`, order, email); err != nil {
		return err
	}
	nj, err := queue.MarshalArgs(Receipt{Order: order, Email: email}, queue.NewJob{Key: fmt.Sprintf("receipt|%d", order)})
	if err != nil {
		return err
	}
	_, err = postgres.EnqueueTx(ctx, tx, nj)
	return err
}

// The same assertions on PostgreSQL: inside the program's pgx transaction
// on the queue's database, then on the Client after the commit.
func ExampleRequireEnqueued_postgres() {
	t := examplet.New() // in a test, the *testing.T
	defer t.Finish()
	ctx := context.Background()
	url := examplet.PostgresURL() // in a test, a schema of its own in search_path
	s, err := postgres.Open(ctx, url, postgres.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(s, queue.Config{})
	defer q.Close()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close(ctx)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY, email text)`); err != nil {
			return err
		}
		if err := placeOrderPostgres(ctx, tx, 42, "ada@example.com"); err != nil {
			return err
		}
		j := queuetest.RequireEnqueuedPostgresTx(t, tx, queuetest.Want{Type: "receipt", Payload: map[string]any{"order": 42}})
		fmt.Println("in the transaction:", j.Key)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	j := queuetest.RequireEnqueued(t, q, queuetest.Want{Key: "receipt|42", State: queue.StatePending, Payload: Receipt{Order: 42, Email: "ada@example.com"}})
	fmt.Println("committed:", j.Type, string(j.Payload))
	queuetest.RequireNotEnqueued(t, q, queuetest.Want{Type: "receipt", Payload: map[string]any{"order": 43}})
	// Output:
	// in the transaction: receipt|42
	// committed: receipt {"order":42,"email":"ada@example.com"}
}
