package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Watch sends on changed when another node may have made a job ready or
// asked for a cancel: it LISTENs on the schema's channel, to which the
// stores' enqueues, advances, retries, reclaims and cancel requests
// NOTIFY after they commit (see notify). It holds one connection of its
// own (not one of the pool's). A lost connection is made again, with a backoff from
// watchBackoff to watchBackoffMax, and followed by a wake-up: notices sent
// meanwhile are lost. It also wakes every w.Safety in any case.
func (s *Store) Watch(ctx context.Context, w store.WatchConfig, changed chan<- struct{}, started func()) {
	send := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	// started is called once, at the latest as Watch returns: the pool
	// waits for it before its first claim, and a Watch that ends before it
	// could listen (ctx done during the connection, a server that never
	// answered) must not leave the pool waiting for ever.
	var once sync.Once
	begin := func() {
		if started != nil {
			once.Do(started)
		}
	}
	defer begin()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	safety := make(chan struct{})
	go func() {
		defer close(safety)
		every := w.Safety
		if every <= 0 {
			every = w.Poll
		}
		if every <= 0 {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.cfg.Clock.After(every):
				send()
			}
		}
	}()
	defer func() { <-safety }()
	backoff := time.Duration(0)
	first := true
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.cfg.Clock.After(backoff):
			}
		}
		err := s.listen(ctx, func() {
			backoff = 0
			if first {
				first = false
				begin()
				return
			}
			send() // listening again: what was sent meanwhile is lost
		}, send)
		if ctx.Err() != nil {
			return
		}
		s.log.WarnContext(ctx, "watch: listen for notifications", "channel", s.channel, "err", err)
		backoff = min(max(2*backoff, watchBackoff), watchBackoffMax)
	}
}

// The backoff of Watch between two attempts to listen again.
const (
	watchBackoff    = 100 * time.Millisecond
	watchBackoffMax = 10 * time.Second
)

// listen connects, LISTENs, calls listening, then calls notified for each
// notification but this store's own of ready jobs, until the connection
// fails or ctx is done.
func (s *Store) listen(ctx context.Context, listening, notified func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload != s.sender { // this store's own ready jobs: see notify
			notified()
		}
	}
}
