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

// TestFakeStepMovesTheWallClockAlone: a step moves Now, not Monotonic,
// and a timer fires after its duration of elapsed time whatever the wall
// clock did, as a real timer does.
func TestFakeStepMovesTheWallClockAlone(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	a := f.After(time.Minute)
	f.Step(time.Hour)
	if fired(a) {
		t.Fatal("a forward step fired a timer")
	}
	if got, want := f.Now(), t0.Add(time.Hour); !got.Equal(want) || f.Monotonic() != 0 {
		t.Fatalf("after Step(1h): Now() = %v, Monotonic() = %v; want %v, 0", got, f.Monotonic(), want)
	}
	f.Set(t0.Add(-time.Hour)) // a backward step
	f.Advance(59 * time.Second)
	if fired(a) {
		t.Fatal("the timer fired before its minute passed")
	}
	f.Advance(time.Second)
	if !fired(a) {
		t.Fatal("the timer did not fire once its minute passed, after steps both ways")
	}
	if got, want := f.Monotonic(), time.Minute; got != want {
		t.Errorf("Monotonic() = %v, want %v", got, want)
	}
	if got, want := f.Now(), t0.Add(-time.Hour+time.Minute); !got.Equal(want) {
		t.Errorf("Now() = %v, want %v", got, want)
	}
}

func TestStepsReportsStepsOfTheWallClock(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	var s Steps
	read := func() time.Duration {
		t.Helper()
		now, d := s.Read(f)
		if !now.Equal(f.Now()) {
			t.Fatalf("Read returned %v, want Now() %v", now, f.Now())
		}
		return d
	}
	f.Step(time.Hour) // before the first reading: nothing to compare with
	if d := read(); d != 0 {
		t.Errorf("first Read: step %v, want 0", d)
	}
	f.Advance(time.Hour)
	if d := read(); d != 0 {
		t.Errorf("after Advance: step %v, want 0", d)
	}
	for _, tt := range []struct {
		name  string
		steps []time.Duration
		want  time.Duration
	}{
		{"forward", []time.Duration{10 * time.Second}, 10 * time.Second},
		{"backward", []time.Duration{-time.Minute}, -time.Minute},
		{"two add up", []time.Duration{time.Minute, -10 * time.Second}, 50 * time.Second},
		{"undone", []time.Duration{time.Minute, -time.Minute}, 0},
		{"under StepMin", []time.Duration{StepMin / 2}, 0},
	} {
		f.Advance(time.Second)
		for _, d := range tt.steps {
			f.Step(d)
		}
		f.Advance(time.Second)
		if d := read(); d != tt.want {
			t.Errorf("%s: step %v, want %v", tt.name, d, tt.want)
		}
		if d := read(); d != 0 {
			t.Errorf("%s: step %v at the next Read, want 0", tt.name, d)
		}
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
