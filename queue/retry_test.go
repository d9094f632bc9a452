package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	plain := errors.New("boom")
	noJitter := func(time.Duration) time.Duration { return 0 }
	tc := TypeConfig{Backoff: 10 * time.Second, MaxBackoff: time.Minute}
	tests := []struct {
		name        string
		err         error
		attempt     int
		max         int
		wantOutcome Outcome
		wantDelay   time.Duration
	}{
		{"success", nil, 1, 3, OutcomeDone, 0},
		{"success on last attempt", nil, 3, 3, OutcomeDone, 0},
		{"plain error retries", plain, 1, 3, OutcomeRetry, 5 * time.Second},
		{"plain error on last attempt is dead", plain, 3, 3, OutcomeDead, 0},
		{"permanent is dead at once", Permanent(plain), 1, 3, OutcomeDead, 0},
		{"wrapped permanent is dead", fmt.Errorf("run: %w", Permanent(plain)), 1, 3, OutcomeDead, 0},
		{"retry after", RetryAfter(42*time.Second, plain), 1, 3, OutcomeRetry, 42 * time.Second},
		{"retry after on last attempt is dead", RetryAfter(42*time.Second, plain), 3, 3, OutcomeDead, 0},
		{"negative retry after is now", RetryAfter(-time.Second, plain), 1, 3, OutcomeRetry, 0},
		{"timeout is an ordinary failure", fmt.Errorf("attempt: %w", context.DeadlineExceeded), 2, 3, OutcomeRetry, 10 * time.Second},
		{"panic is an ordinary failure", &PanicError{Value: "x"}, 1, 3, OutcomeRetry, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotOutcome, gotDelay := decide(tt.err, tt.attempt, tt.max, tc, noJitter)
			if gotOutcome != tt.wantOutcome || gotDelay != tt.wantDelay {
				t.Errorf("decide(%v, %d, %d) = %s, %v; want %s, %v", tt.err, tt.attempt, tt.max, gotOutcome, gotDelay, tt.wantOutcome, tt.wantDelay)
			}
		})
	}
}

func TestBackoffFollowsPolicy(t *testing.T) {
	t.Parallel()
	low := func(time.Duration) time.Duration { return 0 }
	high := func(n time.Duration) time.Duration { return n - 1 }
	tests := []struct {
		name     string
		n        int
		base     time.Duration
		max      time.Duration
		min, top time.Duration
	}{
		{"first retry about the base", 1, 30 * time.Second, time.Hour, 15 * time.Second, 30 * time.Second},
		{"doubles", 2, 30 * time.Second, time.Hour, 30 * time.Second, time.Minute},
		{"doubles again", 3, 30 * time.Second, time.Hour, time.Minute, 2 * time.Minute},
		{"capped", 10, 30 * time.Second, time.Hour, 30 * time.Minute, time.Hour},
		{"capped for huge n", 500, time.Second, time.Minute, 30 * time.Second, time.Minute},
		{"defaults", 1, 0, 0, DefaultBackoff / 2, DefaultBackoff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff(tt.n, tt.base, tt.max, low); got != tt.min {
				t.Errorf("backoff(%d) with lowest jitter = %v, want %v", tt.n, got, tt.min)
			}
			if got := backoff(tt.n, tt.base, tt.max, high); got != tt.top {
				t.Errorf("backoff(%d) with highest jitter = %v, want %v", tt.n, got, tt.top)
			}
			for range 100 {
				if got := backoff(tt.n, tt.base, tt.max, nil); got < tt.min || got > tt.top {
					t.Fatalf("backoff(%d) = %v, outside [%v, %v]", tt.n, got, tt.min, tt.top)
				}
			}
		})
	}
	// Gaps never shrink, whatever the jitter draws.
	for range 200 {
		prev := time.Duration(0)
		for n := 1; n <= 12; n++ {
			d := backoff(n, time.Second, time.Hour, nil)
			if d < prev {
				t.Fatalf("backoff(%d) = %v < backoff(%d) = %v", n, d, n-1, prev)
			}
			prev = d
		}
	}
}
