package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 8, 6, 0, 0, 0, time.UTC)

func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestFakeFiresTimersWhenDue(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	a, b := f.After(time.Second), f.After(time.Minute)
	if !fired(f.After(0)) {
		t.Error("After(0) did not fire at once")
	}
	f.Advance(999 * time.Millisecond)
	if fired(a) || fired(b) {
		t.Fatal("a timer fired early")
	}
	f.Advance(time.Millisecond)
	if !fired(a) || fired(b) {
		t.Fatal("after 1s: want only the 1s timer fired")
	}
	if got, want := f.Now(), t0.Add(time.Second); !got.Equal(want) {
		t.Errorf("Now() = %v, want %v", got, want)
	}
	f.Set(t0.Add(-time.Hour)) // backwards: nothing fires
	if fired(b) || f.Waiters() != 1 {
		t.Fatalf("a backward Set fired a timer (waiters %d)", f.Waiters())
	}
	f.Set(t0.Add(time.Hour))
	if !fired(b) || f.Waiters() != 0 {
		t.Fatal("a forward Set past the deadline did not fire")
	}
}

func TestFakeBlockUntil(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	done := make(chan struct{})
	go func() {
		f.BlockUntil(2)
		close(done)
	}()
	f.After(time.Second)
	select {
	case <-done:
		t.Fatal("BlockUntil(2) returned with one waiter")
	default:
	}
	f.After(time.Second)
	select {
	case <-done:
	case <-time.After(10 * time.Second): // failure deadline
		t.Fatal("BlockUntil(2) did not return with two waiters")
	}
}
