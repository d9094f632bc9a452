package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
)

// An order and the job that mails its receipt commit together, or not at
// all: the program's own write and the enqueue share one transaction.
func ExampleStore_Tx() {
	dir, _ := os.MkdirTemp("", "outbox-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "jobs.db"), sqlite.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	err = s.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, item TEXT)`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id, item) VALUES (42, 'book')`); err != nil {
			return err
		}
		_, err := sqlite.EnqueueTx(ctx, tx, store.NewJob{Type: "receipt", Key: "receipt|42"})
		return err
	})
	fmt.Println("committed:", err == nil)
	j, _ := s.JobByKey(ctx, "receipt|42")
	fmt.Println("job:", j.Type, j.State)
	// Output:
	// committed: true
	// job: receipt pending
}
