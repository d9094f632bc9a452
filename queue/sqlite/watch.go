package sqlite

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Watch sends on changed when another connection commits to the file,
// which is how a pool notices a job enqueued, or a cancel asked, by another
// process without polling the jobs table. It reads PRAGMA data_version (a
// read of shared memory) when inotify reports a write to the file on the
// database's directory, and every millisecond instead while the file is
// busy with writes; or every w.Poll where it cannot watch the file (other
// systems, inotify limits reached, Config.NoFileWatch): it logs so once.
// Under inotify it still reads every w.Safety.
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
	// look reads data_version and sends on changed when it shows another
	// connection's commit (seen); own is a change that was this process's
	// own commit. It returns false once ctx is done.
	look := func() (seen, own, ok bool) {
		var v int64
		// Without ctx: a cancellable query costs the driver a goroutine,
		// and the select below notices ctx anyway.
		if err := st.QueryRowContext(context.Background()).Scan(&v); err != nil {
			if ctx.Err() != nil {
				return false, false, false
			}
			s.log.WarnContext(ctx, "read data version", "err", err)
			return false, false, true
		}
		if v == last {
			return false, false, true
		}
		last = v
		var wv int64
		if err := wst.QueryRowContext(context.Background()).Scan(&wv); err != nil {
			if ctx.Err() != nil {
				return false, false, false
			}
			s.log.WarnContext(ctx, "read data version", "err", err)
			wv = lastW + 1 // wake: better a look too many than a job missed
		}
		switch {
		case lastW == -1: // the first look: nothing to compare with
			lastW = wv
			return false, false, true
		case wv == lastW:
			return false, true, true
		}
		select {
		case changed <- struct{}{}:
		default:
		}
		lastW = wv
		return true, false, true
	}
	var timer <-chan time.Time
	// A write to the WAL comes before its commit is visible (after the
	// fsync, when the WAL index in shared memory is updated, which makes
	// no event): a read right after the event may still see the old
	// version. Until another connection's commit shows, the watch reads
	// again every settleStep, then less and less often, for settleFor. It
	// goes on after a commit of this process: another process's write
	// may have followed it, its events read together with this one's.
	var next <-chan time.Time
	var settling bool
	var settleStart time.Duration // by the monotonic clock, as the other marks
	var settleN int
	// While the file is busy, the watch pauses the file watch and reads
	// every settleStep instead, whatever the rate of writes. This exists
	// for speed. A pool of this process that drains commits many times a
	// millisecond, and each commit writes the WAL many times: an event
	// for each woke the file watch's goroutine and this one, which cost
	// a drain that commits a job at a time two fifths of its rate
	// (queue's BenchmarkDrain, 8 workers, prefetch=-1: 14,500 jobs/s
	// against 24,500 with no file watch; 20,200 with the pause). The
	// file is busy once writes have kept coming, less than a settleStep
	// apart, for busyAfter: the few commits of a job run now and then
	// (enqueue, claim, completion) stay events, as they cost less so.
	// It is quiet again after settleFast reads in a row without a
	// change: the watch listens, reads once more (a write made while it
	// was paused made no event), and settles as after a commit of its
	// own. Another process's commit made while it is busy is seen at
	// the next read, within a settleStep.
	var busy bool
	var quiet int // reads in a row, while busy, that saw no change
	// lastWrite is when the watch took the last write's event (negative:
	// none since the pause), and burstStart the first of those since the
	// last gap of a settleStep.
	burstStart, lastWrite := time.Duration(0), time.Duration(-1)
	// Taken before the first look, and again only once it fired: a
	// request between two looks closes the one held.
	cancelAsked := s.cancelSignal()
	// stopWatch ends the use of the file watch after err: Watch polls.
	stopWatch := func(err error) {
		s.log.InfoContext(ctx, "database file watch ended, polling for other writers", "interval", w.Poll, "err", err)
		if fw != nil {
			fw.Close()
			fw = nil
		}
		written, poll, timer, busy, settling = nil, w.Poll, nil, false, false
	}
	for {
		seen, own, ok := look()
		if !ok {
			return
		}
		start()
		next = nil
		switch {
		case busy && (seen || own):
			quiet = 0
			next = s.clock.After(settleStep)
		case busy && quiet+1 < settleFast:
			quiet++
			next = s.clock.After(settleStep)
		case busy:
			busy, lastWrite = false, -1
			if err := fw.Resume(); err != nil {
				stopWatch(err)
				continue
			}
			settling, settleStart, settleN = true, s.clock.Monotonic(), settleFast
			continue // the read once more
		case seen:
			settling = false
		case own:
			// This process's commit showed. Another process's, written
			// just after it, would show within its fsync: a few slower
			// looks cover it without reading every settleStep behind a
			// busy pool's every commit.
			settling, settleStart, settleN = true, s.clock.Monotonic(), settleFast
			next = s.clock.After(settleDelay(settleN + 1))
		case settling && s.clock.Monotonic()-settleStart < settleFor:
			settleN++
			next = s.clock.After(settleDelay(settleN))
		default:
			settling = false
		}
		if timer == nil {
			timer = s.clock.After(poll)
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-written:
				if !ok {
					stopWatch(errWatchEnded)
					waiting = false
					break
				}
				if busy {
					break // a write reported before the pause: the reads see it
				}
				now := s.clock.Monotonic()
				if lastWrite < 0 || now-lastWrite >= settleStep {
					burstStart = now
				}
				lastWrite = now
				if now-burstStart >= busyAfter {
					if err := fw.Pause(); err != nil {
						stopWatch(err)
					} else {
						busy, quiet, settling = true, 0, false
					}
				} else {
					// Read now, and again until the commit shows.
					settling, settleStart, settleN = true, now, 0
				}
				waiting = false
			case <-next:
				waiting = false
			case <-timer:
				timer, waiting = nil, false
			case <-cancelAsked:
				cancelAsked = s.cancelSignal()
				select {
				case changed <- struct{}{}:
				default:
				}
				waiting = false
			}
		}
	}
}

// errWatchEnded is why Watch polls after the file watch ended on its own.
var errWatchEnded = errors.New("the watch of the directory ended")

// settleFor is how long the watch re-reads data_version after a write it
// saw, waiting for the commit to become visible; settleDelay(n) is the
// wait before the n-th re-read: settleStep for the first settleFast, then
// four times longer each time up to a second. busyAfter is how long
// writes keep coming before the watch pauses the file watch (see
// Watch).
const (
	settleFor  = 5 * time.Second
	settleStep = time.Millisecond
	settleFast = 16
	busyAfter  = 4 * settleStep
)

func settleDelay(n int) time.Duration {
	if n <= settleFast {
		return settleStep
	}
	return min(settleStep<<min(2*(n-settleFast), 10), time.Second)
}
