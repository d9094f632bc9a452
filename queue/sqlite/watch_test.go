package sqlite

import (
	"context"
	"sync"
	"testing"
	"time"

	"scheduler/clock"
	"scheduler/queue/store"
)

// TestWatchPollsAfterFileWatchEnds: when the file watch ends while Watch
// runs (its channel closes: the directory went away, a read failed), Watch
// goes on reading data_version every WatchConfig.Poll of the store's
// clock, and so still notices a commit by another store on the file.
func TestWatchPollsAfterFileWatchEnds(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	var mu sync.Mutex
	var fw *fileWatch
	q.watchFileFunc = func(path string) (*fileWatch, error) {
		w, err := watchFile(path)
		mu.Lock()
		fw = w
		mu.Unlock()
		return w, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 1)
	started := make(chan struct{})
	done := make(chan struct{})
	const poll = 2 * time.Second
	go func() {
		defer close(done)
		q.Watch(ctx, store.WatchConfig{Poll: poll, Safety: time.Hour}, changed, func() { close(started) })
	}()
	defer func() { cancel(); waitFor(t, done) }()
	waitFor(t, started)
	mu.Lock()
	w := fw
	mu.Unlock()
	if w == nil {
		t.Skip("no file watch here: Watch polls from the start")
	}
	// Parked on the Safety timer, under the file watch.
	blockUntil(t, clk, 1)

	// The watch ends on its own: its goroutine's read fails and it closes
	// C, as when the directory is removed.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Parked again, now also on a Poll timer.
	blockUntil(t, clk, 2)

	other, err := Open(context.Background(), q.Name(), Config{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Enqueue(context.Background(), NewJob{Type: "t", Key: "other"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Fatal("change noticed with no watch and no poll due")
	default:
	}
	clk.Advance(poll)
	waitFor(t, changed)
}

// blockUntil returns once n timers of clk are pending, failing the test
// after a deadline that is a failure bound, not a synchronisation point.
func blockUntil(t testing.TB, clk *clock.Fake, n int) {
	t.Helper()
	ok := make(chan struct{})
	go func() {
		clk.BlockUntil(n)
		close(ok)
	}()
	waitFor(t, ok)
}
