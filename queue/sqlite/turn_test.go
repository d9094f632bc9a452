//go:build unix

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// TestWriterGetsItsTurnAgainstABusyWriter checks that a process's writes
// succeed while another process writes back to back, even with a busy
// timeout far shorter than the other's run of transactions: writers take
// turns instead of polling SQLite's lock. Two Queues on one file lock like
// two processes (each has its own descriptors and connections).
func TestWriterGetsItsTurnAgainstABusyWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	daemon, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer daemon.Close()
	op, err := Open(ctx, path, Config{BusyTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer op.Close()

	// The busy writer commits batches back to back until the operator is
	// done, and must keep committing meanwhile.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var batches atomic.Int64
	var busyErr error
	started := make(chan struct{})
	wg.Go(func() {
		for n := 0; ; n++ {
			batch := make([]NewJob, 200)
			for i := range batch {
				batch[i] = NewJob{Type: "t", Key: fmt.Sprintf("d%d-%d", n, i)}
			}
			if _, err := daemon.EnqueueBatch(ctx, batch); err != nil {
				busyErr = err
				return
			}
			batches.Add(1)
			if n == 0 {
				close(started)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	waitFor(t, started)
	before := batches.Load()
	for i := range 20 {
		if _, err := op.Enqueue(ctx, NewJob{Type: "t", Key: fmt.Sprint("op", i)}); err != nil {
			t.Errorf("operator enqueue %d: %v", i, err)
		}
	}
	during := batches.Load() - before
	close(stop)
	wg.Wait()
	if busyErr != nil {
		t.Errorf("busy writer: %v", busyErr)
	}
	if during < 2 {
		t.Errorf("busy writer committed %d batches while the operator wrote 20 jobs, want it not starved", during)
	}
}

// TestWriteWaitBoundsTheTurn checks that a write whose turn does not come
// within WriteWait fails with an error saying so, and that the turn is
// taken normally once it is free again.
func TestWriteWaitBoundsTheTurn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	holder, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer holder.Close()
	clk := clock.NewFake(t0)
	op, err := Open(ctx, path, Config{Clock: clk, WriteWait: time.Minute})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer op.Close()

	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- holder.inTx(ctx, false, func(tx txn) error {
			close(holding)
			<-release
			return nil
		})
	}()
	waitFor(t, holding)
	res := make(chan error, 1)
	go func() {
		_, err := op.Enqueue(ctx, NewJob{Type: "t", Key: "late"})
		res <- err
	}()
	clk.BlockUntil(1)
	clk.Advance(time.Minute)
	err = waitFor(t, res)
	if !errors.Is(err, errTurnTimeout) {
		t.Errorf("Enqueue while the turn is held past WriteWait = %v, want the turn timeout", err)
	}
	close(release)
	if err := waitFor(t, held); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if _, err := op.Enqueue(ctx, NewJob{Type: "t", Key: "again"}); err != nil {
		t.Errorf("Enqueue once the turn is free: %v", err)
	}
}

// BenchmarkTurnUncontended is the cost the write turn adds to every write
// transaction when no other process writes.
func BenchmarkTurnUncontended(b *testing.B) {
	l := newTurnLock(filepath.Join(b.TempDir(), "q.db"), clock.Real{})
	defer l.close()
	ctx := context.Background()
	for b.Loop() {
		unlock, err := l.lock(ctx, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		unlock()
	}
}
