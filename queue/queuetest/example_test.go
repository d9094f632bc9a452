package queuetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"

	"github.com/scheduler-run/scheduler/internal/examplet"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/queuetest"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// Receipt is the arguments of the job that mails an order's receipt.
type Receipt struct {
	Order int    `json:"order"`
	Email string `json:"email"`
}

func (Receipt) Kind() string { return "receipt" }

// sendReceipt is the handler under test.
var sendReceipt = queue.WorkFunc[Receipt](func(ctx context.Context, j *queue.TypedJob[Receipt]) (string, error) {
	if j.Args.Email == "" {
		return "", queue.Permanent(fmt.Errorf("order %d has no email", j.Args.Order))
	}
	if j.Attempt < 3 {
		return "", fmt.Errorf("mail server busy")
	}
	return "sent to " + j.Args.Email, nil
})

// Run a handler on a job as a pool would, without a database: the outcome,
// the retry's delay under the type's backoff (without its random part), and
// the output.
func ExampleWork() {
	t := examplet.New() // in a test, the *testing.T
	defer t.Finish()
	cfg := queuetest.Config{Type: queue.TypeConfig{Backoff: 30 * time.Second}}

	j := queuetest.Claimed(t, Receipt{Order: 42, Email: "ada@example.com"}, queue.NewJob{MaxAttempts: 3})
	for attempt := 1; attempt <= 3; attempt++ {
		j.Attempt = attempt
		r := queuetest.Work(t, sendReceipt, j, cfg)
		fmt.Println(attempt, r.Outcome, r.RetryIn, r.Output, r.Err)
	}
	r := queuetest.Work(t, sendReceipt, queuetest.Claimed(t, Receipt{Order: 43}, queue.NewJob{}), cfg)
	fmt.Println(r.Outcome, r.Err)
	// Output:
	// 1 retry 30s  mail server busy
	// 2 retry 1m0s  mail server busy
	// 3 done 0s sent to ada@example.com <nil>
	// dead permanent: order 43 has no email
}

// placeOrder is the code under test: it saves an order and enqueues its
// receipt in one transaction.
func placeOrder(ctx context.Context, tx *sql.Tx, order int, email string) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, email) VALUES (?, ?)`, order, email); err != nil {
		return err
	}
	nj, err := queue.MarshalArgs(Receipt{Order: order, Email: email}, queue.NewJob{Key: fmt.Sprintf("receipt|%d", order)})
	if err != nil {
		return err
	}
	_, err = sqlite.EnqueueTx(ctx, tx, nj)
	return err
}

// Assert that code enqueued a job: inside its transaction, before the
// commit, and on the Client after it. A payload matches when it holds the
// wanted fields.
func ExampleRequireEnqueued() {
	t := examplet.New() // in a test, the *testing.T
	defer t.Finish()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "jobs.db"), sqlite.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := queue.New(s, queue.Config{})
	defer q.Close()

	err = s.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY, email TEXT)`); err != nil {
			return err
		}
		if err := placeOrder(ctx, tx, 42, "ada@example.com"); err != nil {
			return err
		}
		j := queuetest.RequireEnqueuedSQLiteTx(t, tx, queuetest.Want{Type: "receipt", Payload: map[string]any{"order": 42}})
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
