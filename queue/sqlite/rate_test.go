package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestRateTATRoundsUp: a bucket's TAT is stored rounded up to the
// millisecond, so that a limit of 3 a second, one start per 333.333334ms,
// never lets a fourth start fit in a second.
func TestRateTATRoundsUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"), Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 5 {
		if _, err := s.Enqueue(ctx, store.NewJob{Type: "r", Key: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	l := store.RateLimit{Every: time.Second/3 + 1, Burst: 1}
	var starts []time.Time
	for now := clk.Now(); now.Before(clk.Now().Add(2 * time.Second)); now = now.Add(time.Millisecond) {
		res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1,
			Rated: []store.RatedClaim{{Type: "r", Limit: l, Room: 1}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range res.Claimed {
			starts = append(starts, j.StartedAt)
		}
	}
	for i := 3; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-3]); d < time.Second {
			t.Errorf("starts %v: 4 within %v", starts, d)
		}
	}
}
