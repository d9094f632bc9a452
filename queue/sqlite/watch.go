package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Watch sends on changed when another connection commits to the file, so a
// pool notices other processes' enqueues and cancels without polling. It
// reads PRAGMA data_version (shared memory) when inotify reports a write in
// the directory, every settleStep while the file is busy, and every w.Safety;
// or every w.Poll where it cannot watch, logging so once. s's own commits,
// told apart by the writer's version, do not send, except a cancel request,
// which a pool of this process may hold.
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
	// The file watch starts first, so a commit in between is seen.
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
	// Taken before the first read, and again only after it fired.
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

type watchState int

const (
	listening watchState = iota // waits for a reported write (or the poll's timer)
	// settling: a write was reported or an own commit showed, and another
	// process's commit may follow unseen: it reads again, sooner, then
	// later (see settleFor).
	settling
	// busy: writes keep coming, so the file watch is paused and it reads
	// every settleStep: a pool committing many times a millisecond would
	// wake two goroutines per WAL write.
	busy
)

type watcher struct {
	s       *Store
	ctx     context.Context
	cfg     store.WatchConfig
	changed chan<- struct{}

	fw       *fileWatch      // nil: polling
	written  <-chan struct{} // fw's reports of writes; nil: none
	poll     time.Duration   // period of the timed read
	versions *versions

	state       watchState
	timer       <-chan time.Time // the read every poll
	next        <-chan time.Time // the next read of settling or busy
	settleStart time.Duration    // when settling began (monotonic)
	settleN     int              // reads made while settling
	quiet       int              // reads in a row, while busy, that saw no change
	// lastWrite is when a write was last reported (negative: none since
	// busy), burstStart the first since a settleStep gap.
	burstStart, lastWrite time.Duration
	cancelAsked           <-chan struct{}
}

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

// stopFileWatch stops using the file watch after err: the watch polls.
func (wt *watcher) stopFileWatch(err error) {
	wt.s.log.InfoContext(wt.ctx, "database file watch ended, polling for other writers", "interval", wt.cfg.Poll, "err", err)
	wt.closeFileWatch()
	wt.written, wt.poll, wt.timer, wt.state = nil, wt.cfg.Poll, nil, listening
}

func (wt *watcher) settle(at time.Duration, n int) {
	wt.state, wt.settleStart, wt.settleN = settling, at, n
}

// read reads data_version and sends on changed for another connection's
// commit (seen); own is this process's. False once ctx is done.
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

// afterRead sets the next read's timer after a read, or returns true to read
// again at once.
func (wt *watcher) afterRead(seen, own bool) bool {
	clk := wt.s.clock
	if wt.state == busy {
		return wt.afterBusyRead(seen || own)
	}
	switch {
	case seen:
		wt.state = listening
	case own:
		// Own commit. Another's, written just after, shows within its
		// fsync: a few slower reads cover it.
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

// afterBusyRead reads every settleStep until settleFast reads saw no change,
// then listens again, reads at once (paused writes made no event), and
// settles.
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

// wait waits for a reported write, a timer, or a cancel request of this
// process; false once ctx is done.
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
				continue // reported before the pause: the reads see it
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

// written1 takes one write's report: read at once, and until the commit
// shows; once writes keep coming under a settleStep apart for busyAfter, the
// watch is busy.
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

var errWatchEnded = errors.New("the watch of the directory ended")

// A WAL write comes before its commit is visible (the shared-memory index is
// updated after the fsync, with no event), so a read right after may see the
// old version. settleFor is how long the watch rereads after a write;
// settleDelay(n) the wait before the n-th read: settleStep for the first
// settleFast, then four times longer each, up to a second. busyAfter is how
// long writes keep coming before the watch is busy.
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

// versions reads PRAGMA data_version on a reader, to see commits, and on the
// writer, whose version changes only with others' commits (every Store write
// goes through it): a change only the reader sees was this process's own.
type versions struct {
	conn        *sql.Conn
	read1, ownW *sql.Stmt
	last, lastW int64
}

// openVersions prepares the data_version reads once: they follow every write,
// a busy pool's own included.
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
// process's. A failed writer read counts as seen: better a look too many.
func (v *versions) read() (seen, own bool, err error) {
	var cur int64
	// Without ctx: a cancellable query costs a goroutine, and the watch's
	// select notices ctx anyway.
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
