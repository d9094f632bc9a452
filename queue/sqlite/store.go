package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Config configures a Store. Zero values select the defaults shown.
type Config struct {
	Clock       clock.Clock   // Default: clock.Real{}.
	Logger      *slog.Logger  // Default: discard.
	BusyTimeout time.Duration // How long SQLite's busy handler waits for a lock. Default: 5s.
	// WriteWait bounds a write's wait for its turn among the file's
	// writers (see turnLock). Default: 2m.
	WriteWait time.Duration
	ReadOnly  bool // no migration, no writes
	// PurgeBatch is the rows one purge transaction deletes, so a waiting
	// writer waits briefly. Default: 1000.
	PurgeBatch int
	// PurgePause is the rest between purge transactions, at least as long
	// as the last, so other processes' polling busy handlers get the lock.
	// Default: 20ms; negative: none.
	PurgePause time.Duration
	// NoFileWatch makes Watch poll instead of using inotify: for tests,
	// and file systems whose writers inotify misses.
	NoFileWatch bool
}

// Store is the queue's rows in one SQLite file; it implements store.Engine.
// It is safe for concurrent use; several processes may open the file.
type Store struct {
	*store.Base // the shared flow, on statements.go's statements

	path  string
	abs   string
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	w     *sql.DB // the one writer connection
	r     *sql.DB // read-only pool
	ckpt  *sql.DB // one connection for background checkpoints
	turn  *turnLock

	stmtMu    sync.RWMutex
	stmts     map[string]*sql.Stmt // prepared on w
	readStmts map[string]*sql.Stmt // prepared on r at first use; under stmtMu

	mu sync.Mutex
	// cancelAsked is closed and replaced when RequestCancel marks a
	// running job, for this process's watches, which pass over its own
	// commits. Under mu.
	cancelAsked chan struct{}

	groupMu sync.Mutex
	group   groupQueue // enqueues waiting to share a transaction

	types  typesCache // the JSON arrays of the pool's type lists
	schema schema     // what an old file opened read-only lacks

	watchFileFunc func(path string) (*fileWatch, error) // set by tests before Watch

	// behind is the checkpoint that large beat batches leave running (see
	// checkpointBehind); closed stops new ones. Under mu.
	behind sync.WaitGroup
	closed bool
	// checkpointing is set while a checkpoint of checkpointBehind runs.
	checkpointing atomic.Bool
}

var _ store.Engine = (*Store)(nil)

// Open opens the store in the SQLite file at path, creating and migrating it
// as needed; a newer schema is store.ErrSchemaTooNew.
func Open(ctx context.Context, path string, cfg Config) (*Store, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BusyTimeout <= 0 {
		cfg.BusyTimeout = 5 * time.Second
	}
	if cfg.WriteWait <= 0 {
		cfg.WriteWait = 2 * time.Minute
	}
	if cfg.PurgeBatch <= 0 {
		cfg.PurgeBatch = 1000
	}
	if cfg.PurgePause == 0 {
		cfg.PurgePause = 20 * time.Millisecond
	}
	if path == "" {
		return nil, errors.New("open queue: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open queue %s: %w", path, err)
	}
	if cfg.ReadOnly {
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("open queue %s: %w", path, err)
		}
	}
	s := &Store{path: path, abs: abs, cfg: cfg, clock: cfg.Clock, log: cfg.Logger, cancelAsked: make(chan struct{})}
	if err := s.open(ctx); err != nil {
		// Close what the open got, the write turn's lock files among it.
		s.closeDBs()
		return nil, fmt.Errorf("open queue %s: %w", path, err)
	}
	s.Base = store.NewBase(backend{s}, s.statements(), s.clock, s.log,
		store.PurgeConfig{Batch: cfg.PurgeBatch, Pause: max(cfg.PurgePause, 0)})
	return s, nil
}

// open opens s's connections, migrates the file or reads what its schema
// lacks, and prepares statements; on error s holds what to close.
func (s *Store) open(ctx context.Context) (err error) {
	cfg, abs := s.cfg, s.abs
	if !cfg.ReadOnly {
		if _, err := createPrivate(abs); err != nil {
			return err
		}
		s.turn = newTurnLock(abs, cfg.Clock)
		// One connection: this process's writers queue for it in Go, not
		// on SQLITE_BUSY, and prepared statements stay prepared.
		if s.w, err = sql.Open("sqlite", dsn(abs, cfg.BusyTimeout, false)); err != nil {
			return err
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		s.w.SetConnMaxIdleTime(0)
		if err := s.retryBusy(ctx, s.migrate); err != nil {
			return err
		}
		if err := s.prepare(ctx); err != nil {
			return err
		}
		s.schema = schema{counts: countsMarked}
	}
	if s.r, err = sql.Open("sqlite", dsn(abs, cfg.BusyTimeout, true)); err != nil {
		return err
	}
	s.r.SetMaxOpenConns(4)
	if !cfg.ReadOnly {
		if s.ckpt, err = sql.Open("sqlite", dsn(abs, cfg.BusyTimeout, false)); err != nil {
			return err
		}
		s.ckpt.SetMaxOpenConns(1)
		return nil
	}
	if err := s.retryBusy(ctx, s.checkVersion); err != nil {
		return err
	}
	s.schema, err = readSchema(ctx, s.r)
	return err
}

// autocheckpointPages is the WAL length, in pages, past which a commit of
// the writer copies the WAL back into the database before it returns.
const autocheckpointPages = 10000

// dsn builds the connection string. Pragmas live here so every pooled
// connection gets them. synchronous=NORMAL is the default; the package
// comment lists the writes that switch to FULL.
func dsn(path string, busy time.Duration, readOnly bool) string {
	v := url.Values{}
	v.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "foreign_keys(1)")
	v.Add("_pragma", "synchronous(NORMAL)")
	// Keep statement journals and sorts of large inserts off temp files.
	v.Add("_pragma", "temp_store(MEMORY)")
	// A running Pool checkpoints in the background, so the writer seldom
	// reaches this and commits without copying pages back; processes
	// without a pool (the CLI) checkpoint past it.
	v.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(autocheckpointPages)+")")
	if readOnly {
		v.Add("_pragma", "query_only(1)")
	} else {
		v.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode()
}

// Name returns the database file's path as given to Open.
func (s *Store) Name() string { return s.path }

// Clock returns the store's clock (Config.Clock).
func (s *Store) Clock() clock.Clock { return s.clock }

// Close closes the database, after a checkpoint that a beat's batch left
// running. Pools using s must have returned from Run.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.behind.Wait()
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	var errs []error
	if s.turn != nil {
		errs = append(errs, s.turn.close())
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.Close())
	}
	if s.r != nil {
		s.stmtMu.Lock()
		for _, st := range s.readStmts {
			errs = append(errs, st.Close())
		}
		s.readStmts = nil
		s.stmtMu.Unlock()
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

// createPrivate creates an empty 0600 file at path, whatever the umask,
// unless one exists (which keeps its mode), and reports whether it did. The
// database and backups hold job output; -wal and -shm get its mode. O_EXCL
// also ensures the descriptor closed here is not of a file our SQLite
// connections lock (closing it would drop their POSIX locks).
func createPrivate(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The umask can only narrow 0600; Chmod makes it exact.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(path)
		return false, err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return false, err
	}
	return true, nil
}

// cancelSignal returns the channel the next cancel request through s closes.
func (s *Store) cancelSignal() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelAsked
}

// signalCancel tells s's watches that a running job was asked to cancel.
func (s *Store) signalCancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.cancelAsked)
	s.cancelAsked = make(chan struct{})
}
