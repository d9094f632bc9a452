//go:build unix

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/clock"
)

// turnLock gives the processes writing one database their turns in order.
// SQLite's busy handler is not fair: a waiter polls, and a process that
// commits and begins again at once (the daemon) can win every poll until the
// waiter times out. So every write first takes the turn, an flock(2) on
// <db>-lock, and waiters block in the kernel. The turn is handed over through
// a gate, an flock on <db>-gate taken before the turn and let go after: only
// the gate's holder waits for the turn, so a writer coming straight back
// queues behind the waiters. A dying process loses both.
type turnLock struct {
	clock clock.Clock
	db    string // path of the database file
	gate  string // path of <db>-gate
	turn  string // path of <db>-lock

	mu       sync.Mutex // guards the file descriptors below
	gateFile *os.File   // opened once, for the uncontended path
	turnFile *os.File
}

func newTurnLock(db string, clk clock.Clock) *turnLock {
	return &turnLock{clock: clk, db: db, gate: db + "-gate", turn: db + "-lock"}
}

// errTurnTimeout is returned when a write waited past its bound.
var errTurnTimeout = errors.New("timed out waiting for the write turn")

// lock waits up to wait for the write turn and returns its release. One
// caller at a time: the single writer connection serialises a process.
func (l *turnLock) lock(ctx context.Context, wait time.Duration) (unlock func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gateFile == nil {
		if l.gateFile, err = openLockFile(l.gate, l.db); err != nil {
			return noTurn(err)
		}
		if l.turnFile, err = openLockFile(l.turn, l.db); err != nil {
			l.gateFile.Close()
			l.gateFile = nil
			return noTurn(err)
		}
	}
	// Uncontended: four system calls, no goroutine.
	if flockNB(l.gateFile) {
		ok := flockNB(l.turnFile)
		unix.Flock(int(l.gateFile.Fd()), unix.LOCK_UN)
		if ok {
			f := l.turnFile
			return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN) }, nil
		}
	}
	return l.wait(ctx, wait)
}

// noTurn decides a write's fate when the lock files cannot be opened: where
// nobody can create them, nobody takes turns, and SQLite decides.
func noTurn(err error) (func(), error) {
	if errors.Is(err, unix.EROFS) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return func() {}, nil
	}
	return nil, err
}

// wait blocks in the kernel for the gate, then the turn, on descriptors of
// its own. A blocked flock cannot be interrupted, so a wait given up goes on
// in its goroutine until it gets the turn, then gives it back. Nobody waits
// for it: it holds only its descriptors, and waiting would let another
// process delay Close.
func (l *turnLock) wait(ctx context.Context, wait time.Duration) (func(), error) {
	gate, err := openLockFile(l.gate, l.db)
	if err != nil {
		return noTurn(err)
	}
	turn, err := openLockFile(l.turn, l.db)
	if err != nil {
		gate.Close()
		return noTurn(err)
	}
	got := make(chan error) // unbuffered: exactly one side decides
	abandon := make(chan struct{})
	go func() {
		err := flockWait(gate)
		if err == nil {
			err = flockWait(turn)
			unix.Flock(int(gate.Fd()), unix.LOCK_UN)
		}
		gate.Close()
		select {
		case got <- err:
			if err != nil {
				turn.Close()
			}
		case <-abandon:
			turn.Close()
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			return nil, fmt.Errorf("wait for the write turn: %w", err)
		}
		return func() { turn.Close() }, nil
	case <-ctx.Done():
		close(abandon)
		return nil, ctx.Err()
	case <-l.clock.After(wait):
		close(abandon)
		return nil, fmt.Errorf("%w (%v): other processes keep the database busy", errTurnTimeout, wait)
	}
}

func (l *turnLock) close() error {
	l.mu.Lock()
	var errs []error
	if l.gateFile != nil {
		errs = append(errs, l.gateFile.Close(), l.turnFile.Close())
		l.gateFile, l.turnFile = nil, nil
	}
	l.mu.Unlock()
	return errors.Join(errs...)
}

// openLockFile opens (creating, 0600) a lock file beside db, never db itself,
// whose descriptor's closing would drop SQLite's POSIX locks. As SQLite does
// for -wal, root gives a file it creates db's owner, so the daemon's user can
// open it after root ran a command.
func openLockFile(path, db string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR, 0)
	} else if err == nil && os.Geteuid() == 0 {
		var st unix.Stat_t
		if unix.Stat(db, &st) == nil {
			f.Chown(int(st.Uid), int(st.Gid))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	return f, nil
}

func flockNB(f *os.File) bool {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}

func flockWait(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
