package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestAdvanceBatchFailedTransaction: a batch too large for one transaction
// whose second transaction fails keeps the first one's Advances, and writes
// nothing of the failed one's nor of those after it, each of which reports
// the failure.
func TestAdvanceBatchFailedTransaction(t *testing.T) {
	boom := errors.New("boom")
	testHookInsert = func(j NewJob) error {
		if j.Key == "bad" {
			return boom
		}
		return nil
	}
	defer func() { testHookInsert = nil }()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	var advs []Advance
	for i := range 5 { // 2,001 rows each: transactions of [0 1] [2 3] [4]
		s := fmt.Sprintf("s%d", i)
		a := Advance{Schedule: s, To: t0}
		for k := range 2000 {
			a.Jobs = append(a.Jobs, NewJob{Type: "t", Key: fmt.Sprintf("%s|%d", s, k), Schedule: s})
		}
		advs = append(advs, a)
	}
	advs[3].Jobs[1999] = NewJob{Type: "t", Key: "bad", Schedule: "s3", SkipIfActive: true}
	res, err := q.AdvanceBatch(ctx, advs)
	if err != nil {
		t.Fatal(err)
	}
	cursors, _ := q.Cursors(ctx)
	for i, r := range res {
		s := advs[i].Schedule
		_, cur := cursors[s]
		_, jobErr := jobByRef(ctx, q, s+"|0")
		if i < 2 {
			if r.Err != nil || !cur || jobErr != nil {
				t.Errorf("%s: err %v, cursor %t, job %v: want committed", s, r.Err, cur, jobErr)
			}
			continue
		}
		if !errors.Is(r.Err, boom) || cur || !errors.Is(jobErr, ErrNotFound) {
			t.Errorf("%s: err %v, cursor %t, job %v: want boom and nothing written", s, r.Err, cur, jobErr)
		}
	}
}

// TestAdvanceBatchCheckpointsBehind: a batch of many jobs leaves the
// writer's autocheckpoint as it found it, and a checkpoint in the
// background copies the batch's pages into the database file, which Close
// waits for.
func TestAdvanceBatchCheckpointsBehind(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	if err := q.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(q.abs)
	if err != nil {
		t.Fatal(err)
	}
	a := Advance{Schedule: "s", To: t0}
	for k := range 2 * bigBatchRows {
		a.Jobs = append(a.Jobs, NewJob{Type: "t", Key: fmt.Sprintf("s|%d", k), Schedule: "s"})
	}
	res, err := q.AdvanceBatch(ctx, []Advance{a})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AdvanceBatch: %v, %v", err, res[0].Err)
	}
	var pages int
	if err := q.w.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != autocheckpointPages {
		t.Errorf("writer's wal_autocheckpoint = %d after the batch, want %d", pages, autocheckpointPages)
	}
	q.behind.Wait()
	after, err := os.Stat(q.abs)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() <= before.Size() {
		t.Errorf("database file %d bytes after the batch's checkpoint, %d before: want its pages copied in", after.Size(), before.Size())
	}
}
