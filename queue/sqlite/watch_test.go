package sqlite

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
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
	const poll = 2 * time.Second
	changed := startWatch(t, q, store.WatchConfig{Poll: poll, Safety: time.Hour})
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

// startWatch runs q.Watch with w until the test ends, and returns its
// changed channel once the watch has made its first read.
func startWatch(t *testing.T, q *Store, w store.WatchConfig) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 1)
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.Watch(ctx, w, changed, func() { close(started) })
	}()
	t.Cleanup(func() { cancel(); waitFor(t, done) })
	waitFor(t, started)
	return changed
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

// TestWatchPausesTheFileWatchWhileTheFileIsBusy: writes reported
// singly each start a read, and pause nothing; once they have kept
// coming, less than a settleStep apart, for busyAfter, the watch pauses
// the file watch and reads data_version every settleStep of the store's
// clock, so that another store's commit, which then makes no event, is
// seen at the next read. After settleFast reads in a row without a
// change it listens again, and reads once more at once, for a commit made
// while it was paused. The file watch is the test's: it reports a write
// when the test sends one, and the send returns once the watch took it.
func TestWatchPausesTheFileWatchWhileTheFileIsBusy(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	other, err := Open(context.Background(), q.Name(), Config{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	enqueue := func(key string) {
		t.Helper()
		if _, err := other.Enqueue(context.Background(), NewJob{Type: "t", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	writes := make(chan struct{})
	listens := make(chan bool, 16)
	var mu sync.Mutex
	var beforeResume func()
	q.watchFileFunc = func(string) (*fileWatch, error) {
		return &fileWatch{C: writes, close: func() error { return nil }, listen: func(on bool) error {
			mu.Lock()
			f := beforeResume
			beforeResume = nil
			mu.Unlock()
			if on && f != nil {
				f()
			}
			listens <- on
			return nil
		}}, nil
	}
	changed := startWatch(t, q, store.WatchConfig{Poll: time.Hour, Safety: time.Hour})
	write := func() { t.Helper(); sendWithin(t, writes) }
	noChange := func(when string) {
		t.Helper()
		select {
		case <-changed:
			t.Fatalf("a change was sent %s", when)
		default:
		}
	}
	noListen := func(when string) {
		t.Helper()
		select {
		case on := <-listens:
			t.Fatalf("listen(%v) %s", on, when)
		default:
		}
	}

	// Writes a settleStep apart are single: each is read at once, and
	// the watch stays on the file watch. Each write here is another
	// store's commit, and the change it sends says the watch has taken
	// the write's time.
	commit := func(key string) {
		t.Helper()
		enqueue(key)
		write()
		waitFor(t, changed)
	}
	for i := range 8 {
		commit(fmt.Sprint("single", i))
		clk.Advance(settleStep)
	}
	noListen("for single writes")

	// Writes half a settleStep apart: the watch pauses once they have
	// come for busyAfter.
	steps := int(busyAfter / (settleStep / 2))
	for n := 0; ; n++ {
		commit(fmt.Sprint("burst", n))
		select {
		case on := <-listens:
			if on {
				t.Fatal("listened again, want a pause")
			}
			if n != steps {
				t.Errorf("paused after %d writes half a settleStep apart, want %d", n, steps)
			}
		default:
			if n > 2*steps {
				t.Fatalf("no pause after %d writes half a settleStep apart", n)
			}
			clk.Advance(settleStep / 2)
			continue
		}
		break
	}

	// Paused, the watch passes over the writes reported before the
	// pause, and reads only on its timer: another store's commit is seen
	// at the next read.
	enqueue("a")
	write() // returns once the watch waits again
	noChange("before the watch's next read")
	clk.Advance(settleStep)
	waitFor(t, changed)

	// settleFast reads without a change: the watch listens again, and
	// reads at once, which sees a commit made just before.
	mu.Lock()
	beforeResume = func() { enqueue("b") }
	mu.Unlock()
	for steps := 0; ; steps++ {
		// The read of this step is done once it waits on its next one
		// (beside the Safety timer), or it listened again.
		eventually(t, "the watch's read", func() bool { return clk.Waiters() >= 2 || len(listens) > 0 })
		select {
		case on := <-listens:
			if !on {
				t.Fatal("paused again while paused")
			}
			if steps != settleFast {
				t.Errorf("listened again after %d quiet reads, want %d", steps, settleFast)
			}
		default:
			if steps > 10*settleFast {
				t.Fatalf("still paused after %d quiet reads", steps)
			}
			clk.Advance(settleStep)
			continue
		}
		break
	}
	waitFor(t, changed)

	// Single writes again each start a read.
	clk.Advance(settleStep)
	commit("c")
	noListen("for a single write after the pause")
}

// sendWithin sends on ch, failing the test after a deadline that is a
// failure bound, not a synchronisation point.
func sendWithin(t testing.TB, ch chan<- struct{}) {
	t.Helper()
	select {
	case ch <- struct{}{}:
	case <-time.After(3 * time.Minute):
		t.Fatal("timed out sending")
	}
}

// TestWatchStates walks the watch's states from what its reads see and
// the writes reported: a write settles, a burst of writes makes it busy,
// quiet reads while busy make it listen again, and a commit of this
// process settles it on the slower reads.
func TestWatchStates(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	var listens []bool
	fw := &fileWatch{C: make(chan struct{}), close: func() error { return nil },
		listen: func(on bool) error { listens = append(listens, on); return nil }}
	wt := &watcher{s: &Store{clock: clk, log: slog.New(slog.DiscardHandler)}, ctx: context.Background(), fw: fw, written: fw.C,
		poll: time.Hour, lastWrite: -1}
	want := func(what string, state watchState, n int) {
		t.Helper()
		if wt.state != state || (state == settling && wt.settleN != n) {
			t.Fatalf("%s: state %d (settleN %d), want %d (%d)", what, wt.state, wt.settleN, state, n)
		}
	}

	wt.written1()
	want("a write", settling, 0)
	if wt.afterRead(false, false) || wt.next == nil {
		t.Fatal("a read that saw nothing while settling set no next read")
	}
	want("a read after a write", settling, 1)
	if wt.afterRead(true, false); wt.state != listening {
		t.Fatalf("a read that saw the commit: state %d, want listening", wt.state)
	}
	wt.afterRead(false, true)
	want("a commit of this process", settling, settleFast)
	clk.Advance(settleFor)
	wt.afterRead(false, false)
	want("a read past settleFor", listening, 0)

	// Writes half a settleStep apart for busyAfter: busy, the file watch
	// paused.
	for range int(busyAfter/(settleStep/2)) + 1 {
		clk.Advance(settleStep / 2)
		wt.written1()
	}
	want("a burst of writes", busy, 0)
	if len(listens) != 1 || listens[0] {
		t.Fatalf("listens %v, want one pause", listens)
	}
	// Quiet reads, then one that sees a change: the count starts again.
	for range 5 {
		wt.afterRead(false, false)
	}
	wt.afterRead(true, false)
	for i := range settleFast - 1 {
		if wt.afterRead(false, false) {
			t.Fatalf("quiet read %d after a change listened again", i+1)
		}
		want("a busy read", busy, 0)
	}
	if !wt.afterRead(false, false) {
		t.Fatal("settleFast quiet reads: no read again at once")
	}
	want("settleFast quiet reads", settling, settleFast)
	if len(listens) != 2 || !listens[1] {
		t.Fatalf("listens %v, want a pause then a listen", listens)
	}
}
