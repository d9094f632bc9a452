package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Watch implements store.PoolProtocol.Watch: it LISTENs on the schema's
// channel (see notify) on a connection outside the pool. A lost connection is
// remade, backing off up to watchBackoffMax, then wakes the pool, since
// notices meanwhile are lost.
func (s *Store) Watch(ctx context.Context, w store.WatchConfig, changed chan<- struct{}, started func()) {
	send := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	// started is called once, at the latest as Watch returns, so a Watch
	// that never listened leaves no pool waiting.
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
			send() // listening again: notices meanwhile are lost
		}, send)
		if ctx.Err() != nil {
			return
		}
		s.log.WarnContext(ctx, "watch: listen for notifications", "channel", s.channel, "err", err)
		backoff = min(max(2*backoff, watchBackoff), watchBackoffMax)
	}
}

const (
	watchBackoff    = 100 * time.Millisecond
	watchBackoffMax = 10 * time.Second
)

// listen connects, LISTENs and calls listening, then notified for each notice
// but this store's own ready ones, until the connection fails.
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
		if n.Payload != s.sender { // not this store's own ready jobs (see notify)
			notified()
		}
	}
}
