package sqlite

import (
	"context"
	"errors"
	"fmt"
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
