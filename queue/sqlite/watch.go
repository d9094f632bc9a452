package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Watch sends on changed when another connection commits to the file,
// which is how a pool notices a job enqueued, or a cancel asked, by another
// process without polling the jobs table. It reads PRAGMA data_version (a
// read of shared memory) when inotify reports a write to the file on the
// database's directory, and every settleStep instead while the file is
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
	wt := &watcher{s: s, ctx: ctx, cfg: w, changed: changed, lastWrite: -1}
	wt.openFileWatch()
	defer wt.closeFileWatch()
	versions, err := s.openVersions(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "watch for other writers", "err", err)
		}
		return
	}
	defer versions.close()
	wt.versions = versions
	// Taken before the first read, and again only once it fired: a
	// request between two reads closes the one held.
	wt.cancelAsked = s.cancelSignal()
	for {
		seen, own, ok := wt.read()
		if !ok {
			return
		}
		start()
		if wt.next = nil; wt.afterRead(seen, own) {
			continue
		}
		if !wt.wait() {
			return
		}
	}
}

// watchState is what the watch does between two reads.
type watchState int

const (
	// listening: it waits for the file watch's report of a write (or the
	// poll's timer, without a file watch).
	listening watchState = iota
	// settling: a write was reported, or a commit of this process showed,
	// and another process's commit may follow it and not show at once
	// (see settleFor): it reads again, sooner first, then later.
	settling
	// busy: writes keep coming, so the file watch is paused and the watch
	// reads every settleStep instead, whatever the rate of writes. This
	// exists for speed: a pool of this process that commits many times a
	// millisecond writes the WAL many times a commit, and an event for
	// each would wake the file watch's goroutine and this one.
	busy
)

// watcher is the state of one Watch.
type watcher struct {
	s       *Store
	ctx     context.Context
	cfg     store.WatchConfig
	changed chan<- struct{}

	fw       *fileWatch      // nil: polling
	written  <-chan struct{} // fw's reports of writes; nil: none
	poll     time.Duration   // the period of the read on a timer
	versions *versions

	state watchState
	timer <-chan time.Time // the read every poll
	next  <-chan time.Time // the next read of settling or busy
	// settleStart is when settling began, by the monotonic clock, and
	// settleN how many reads it made.
	settleStart time.Duration
	settleN     int
	quiet       int // reads in a row, while busy, that saw no change
	// lastWrite is when the watch took the last write's report (negative:
	// none since it was last busy), and burstStart the first of those since
	// the last gap of a settleStep.
	burstStart, lastWrite time.Duration
	cancelAsked           <-chan struct{}
}

// openFileWatch watches the file, or says why it polls.
func (wt *watcher) openFileWatch() {
	s := wt.s
	wt.poll = wt.cfg.Poll
	err := errors.New("file watch disabled")
	if !s.cfg.NoFileWatch {
		open := watchFile
		if s.watchFileFunc != nil {
			open = s.watchFileFunc
		}
		wt.fw, err = open(s.abs)
	}
	if err != nil {
		wt.fw = nil
		s.log.InfoContext(wt.ctx, "database file not watched, polling for other writers", "interval", wt.poll, "err", err)
		return
	}
	wt.written, wt.poll = wt.fw.C, wt.cfg.Safety
}

func (wt *watcher) closeFileWatch() {
	if wt.fw != nil {
		wt.fw.Close()
		wt.fw = nil
	}
}

// stopFileWatch ends the use of the file watch after err: the watch polls.
func (wt *watcher) stopFileWatch(err error) {
	wt.s.log.InfoContext(wt.ctx, "database file watch ended, polling for other writers", "interval", wt.cfg.Poll, "err", err)
	wt.closeFileWatch()
	wt.written, wt.poll, wt.timer, wt.state = nil, wt.cfg.Poll, nil, listening
}

// settle enters settling, its reads counted from n.
func (wt *watcher) settle(at time.Duration, n int) {
	wt.state, wt.settleStart, wt.settleN = settling, at, n
}

// read reads data_version, and sends on changed when it shows another
// connection's commit (seen); own is a change that was this process's
// own commit. It returns false once ctx is done.
func (wt *watcher) read() (seen, own, ok bool) {
	seen, own, err := wt.versions.read()
	if err != nil {
		if wt.ctx.Err() != nil {
			return false, false, false
		}
		wt.s.log.WarnContext(wt.ctx, "read data version", "err", err)
	}
	if seen {
		wt.send()
	}
	return seen, own, true
}

func (wt *watcher) send() {
	select {
	case wt.changed <- struct{}{}:
	default:
	}
}

// afterRead moves the watch on from what a read saw: it sets the next
// read's timer, or returns true to read again at once.
func (wt *watcher) afterRead(seen, own bool) bool {
	clk := wt.s.clock
	if wt.state == busy {
		return wt.afterBusyRead(seen || own)
	}
	switch {
	case seen:
		wt.state = listening
	case own:
		// This process's commit showed. Another process's, written just
		// after it, would show within its fsync: a few slower reads cover
		// it without reading every settleStep behind a busy pool's every
		// commit.
		wt.settle(clk.Monotonic(), settleFast)
		wt.next = clk.After(settleDelay(wt.settleN + 1))
	case wt.state == settling && clk.Monotonic()-wt.settleStart < settleFor:
		wt.settleN++
		wt.next = clk.After(settleDelay(wt.settleN))
	default:
		wt.state = listening
	}
	if wt.timer == nil {
		wt.timer = clk.After(wt.poll)
	}
	return false
}

// afterBusyRead moves a busy watch on: it reads every settleStep until
// settleFast reads in a row saw no change, then listens again and reads
// once more at once (a write made while it was paused made no event), and
// settles as after a commit of its own.
func (wt *watcher) afterBusyRead(changed bool) bool {
	clk := wt.s.clock
	switch {
	case changed:
		wt.quiet = 0
	case wt.quiet+1 < settleFast:
		wt.quiet++
	default:
		wt.lastWrite = -1
		if err := wt.fw.Resume(); err != nil {
			wt.stopFileWatch(err)
			return true
		}
		wt.settle(clk.Monotonic(), settleFast)
		return true
	}
	wt.next = clk.After(settleStep)
	if wt.timer == nil {
		wt.timer = clk.After(wt.poll)
	}
	return false
}

// wait waits for the next read: a write reported, the next read's timer,
// the poll's, or a cancel request of this process. It returns false once
// ctx is done.
func (wt *watcher) wait() bool {
	for {
		select {
		case <-wt.ctx.Done():
			return false
		case _, ok := <-wt.written:
			if !ok {
				wt.stopFileWatch(errWatchEnded)
				return true
			}
			if wt.state == busy {
				continue // a write reported before the pause: the reads see it
			}
			wt.written1()
			return true
		case <-wt.next:
			return true
		case <-wt.timer:
			wt.timer = nil
			return true
		case <-wt.cancelAsked:
			wt.cancelAsked = wt.s.cancelSignal()
			wt.send()
			return true
		}
	}
}

// written1 takes the report of one write: it starts a read at once, and
// again until the commit shows; once writes have kept coming, less than a
// settleStep apart, for busyAfter, the watch is busy. The few commits of
// a job run now and then (enqueue, claim, completion) stay events, which
// cost less so.
func (wt *watcher) written1() {
	now := wt.s.clock.Monotonic()
	if wt.lastWrite < 0 || now-wt.lastWrite >= settleStep {
		wt.burstStart = now
	}
	wt.lastWrite = now
	if now-wt.burstStart < busyAfter {
		wt.settle(now, 0)
		return
	}
	if err := wt.fw.Pause(); err != nil {
		wt.stopFileWatch(err)
		return
	}
	wt.state, wt.quiet = busy, 0
}

// errWatchEnded is why Watch polls after the file watch ended on its own.
var errWatchEnded = errors.New("the watch of the directory ended")

// A write to the WAL comes before its commit is visible (after the fsync,
// when the WAL index in shared memory is updated, which makes no event): a
// read right after the event may still see the old version. settleFor is
// how long the watch reads data_version again after a write it saw,
// waiting for the commit to show; settleDelay(n) is the wait before the
// n-th read: settleStep for the first settleFast, then four times longer
// each time up to a second. busyAfter is how long writes keep coming
// before the watch is busy.
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

// versions reads PRAGMA data_version on a connection of the readers, to
// see commits to the file, and on the writer connection, whose version
// changes only with commits of other connections: every write of the
// Store goes through it. A change seen on the readers' connection that the
// writer's does not share was this process's own commit, which needs no
// wake.
type versions struct {
	conn        *sql.Conn
	read1, ownW *sql.Stmt
	last, lastW int64
}

// openVersions prepares the reads of data_version once: they are read
// after every write to the file, a busy pool's own commits included.
func (s *Store) openVersions(ctx context.Context) (*versions, error) {
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	v := &versions{conn: conn, last: -1, lastW: -1}
	if v.read1, err = conn.PrepareContext(ctx, "PRAGMA data_version"); err != nil {
		v.close()
		return nil, err
	}
	if v.ownW, err = s.w.PrepareContext(ctx, "PRAGMA data_version"); err != nil {
		v.close()
		return nil, err
	}
	return v, nil
}

func (v *versions) close() {
	for _, st := range []*sql.Stmt{v.read1, v.ownW} {
		if st != nil {
			st.Close()
		}
	}
	v.conn.Close()
}

// read reads the versions: seen is another connection's commit, own this
// process's. A failed read of the writer's version counts as seen: better
// a look too many than a job missed.
func (v *versions) read() (seen, own bool, err error) {
	var cur int64
	// Without ctx: a cancellable query costs the driver a goroutine, and
	// the watch's select notices ctx anyway.
	if err := v.read1.QueryRowContext(context.Background()).Scan(&cur); err != nil {
		return false, false, err
	}
	if cur == v.last {
		return false, false, nil
	}
	v.last = cur
	var w int64
	if err = v.ownW.QueryRowContext(context.Background()).Scan(&w); err != nil {
		w = v.lastW + 1
	}
	switch {
	case v.lastW == -1: // the first read: nothing to compare with
		v.lastW = w
		return false, false, err
	case w == v.lastW:
		return false, true, err
	}
	v.lastW = w
	return true, false, err
}
