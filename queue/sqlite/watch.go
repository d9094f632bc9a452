package sqlite

import (
	"context"
	"errors"
	"sync"
	"time"

	"scheduler/queue/store"
)

// Watch sends on changed when another connection commits to the file,
// which is how a pool notices a job enqueued, or a cancel asked, by another
// process without polling the jobs table. It reads PRAGMA data_version (a
// read of shared memory) after each write to the file that inotify reports
// on the database's directory, or every w.Poll where it cannot watch the
// file (other systems, inotify limits reached, Config.NoFileWatch): it logs
// so once. Under inotify it still reads every w.Safety.
//
// Commits through s also write the file, and change the watch
// connection's data_version too; the writer connection's tells them
// apart, so they do not send on changed, except a cancel request on a
// running job (RequestCancel), which a pool of this process may hold.
func (s *Store) Watch(ctx context.Context, w store.WatchConfig, changed chan<- struct{}, started func()) {
	var once sync.Once
	start := func() {
		once.Do(func() {
			if started != nil {
				started()
			}
		})
	}
	defer start()
	// The file watch starts before the first read of data_version: a
	// commit between the two is then seen by one or the other.
	var written <-chan struct{}
	poll := w.Poll
	var fw *fileWatch
	err := errors.New("file watch disabled")
	if !s.cfg.NoFileWatch {
		open := watchFile
		if s.watchFileFunc != nil {
			open = s.watchFileFunc
		}
		fw, err = open(s.abs)
	}
	if err == nil {
		defer fw.Close()
		written, poll = fw.C, w.Safety
	} else {
		s.log.InfoContext(ctx, "database file not watched, polling for other writers", "interval", poll, "err", err)
	}
	conn, err := s.r.Conn(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "watch for other writers", "err", err)
		}
		return
	}
	defer conn.Close()
	// Prepared once: it is read after every write to the file, a busy
	// pool's own commits included.
	st, err := conn.PrepareContext(ctx, "PRAGMA data_version")
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "watch for other writers", "err", err)
		}
		return
	}
	defer st.Close()
	// The writer connection's data_version changes only with commits of
	// other connections: every write of this Store goes through it. A
	// change seen on the watch connection that the writer's does not share
	// was this process's own commit, which needs no wake.
	wst, err := s.w.PrepareContext(ctx, "PRAGMA data_version")
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "watch for other writers", "err", err)
		}
		return
	}
	defer wst.Close()
	var lastW int64 = -1
	var last int64 = -1
	var timer <-chan time.Time
	// A write to the WAL comes before its commit is visible (after the
	// fsync, when the WAL index in shared memory is updated, which makes
	// no event): a read right after the event may still see the old
	// version. Until another connection's commit shows, the watch reads
	// again every settleStep, then less and less often, for settleFor. It
	// goes on after a commit of this process: another process's write
	// may have followed it, its events read together with this one's.
	var settle <-chan time.Time
	var settling bool
	// Taken before the first look, and again only once it fired: a
	// request between two looks closes the one held.
	cancelAsked := s.cancelSignal()
	var settleStart time.Time
	var settleN int
	for {
		var v int64
		seen, own := false, false
		// Without ctx: a cancellable query costs the driver a goroutine,
		// and the select below notices ctx anyway.
		if err := st.QueryRowContext(context.Background()).Scan(&v); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.WarnContext(ctx, "read data version", "err", err)
		} else if v != last {
			last = v
			var wv int64
			if err := wst.QueryRowContext(context.Background()).Scan(&wv); err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.WarnContext(ctx, "read data version", "err", err)
				wv = lastW + 1 // wake: better a look too many than a job missed
			}
			if wv != lastW {
				if lastW != -1 {
					select {
					case changed <- struct{}{}:
					default:
					}
				}
				lastW, seen = wv, true
			} else {
				own = true
			}
		}
		start()
		settle = nil
		switch {
		case seen:
			settling = false
		case own:
			// This process's commit showed. Another process's, written
			// just after it, would show within its fsync: a few slower
			// looks cover it without reading every settleStep behind a
			// busy pool's every commit.
			settling, settleStart, settleN = true, s.clock.Now(), settleFast
			settle = s.clock.After(settleDelay(settleN + 1))
		case settling && s.clock.Now().Sub(settleStart) < settleFor:
			settleN++
			settle = s.clock.After(settleDelay(settleN))
		default:
			settling = false
		}
		if timer == nil {
			timer = s.clock.After(poll)
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-written:
			if !ok {
				s.log.InfoContext(ctx, "database file watch ended, polling for other writers", "interval", w.Poll)
				written, poll, timer, settling = nil, w.Poll, nil, false
				continue
			}
			// Read now, and again until the commit shows.
			settling, settleStart, settleN = true, s.clock.Now(), 0
		case <-settle:
		case <-timer:
			timer = nil
		case <-cancelAsked:
			cancelAsked = s.cancelSignal()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
}

// settleFor is how long the watch re-reads data_version after a write it
// saw, waiting for the commit to become visible; settleDelay(n) is the
// wait before the n-th re-read: settleStep for the first settleFast, then
// four times longer each time up to a second.
const (
	settleFor  = 5 * time.Second
	settleStep = time.Millisecond
	settleFast = 16
)

func settleDelay(n int) time.Duration {
	if n <= settleFast {
		return settleStep
	}
	return min(settleStep<<min(2*(n-settleFast), 10), time.Second)
}
