package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/scheduler-run/scheduler/clock"

	"github.com/scheduler-run/scheduler/queue/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config configures a Store. Zero values select the defaults shown.
type Config struct {
	Clock       clock.Clock   // Default: clock.Real{}.
	Logger      *slog.Logger  // Default: discard.
	BusyTimeout time.Duration // How long SQLite's busy handler waits for a lock. Default: 5s.
	// WriteWait bounds how long a write transaction waits for its turn
	// among the processes writing the file (see turnLock); past it the
	// write fails with an error saying so. Default: 2m.
	WriteWait time.Duration
	// ReadOnly opens the file for reads only: no migration, no writes.
	ReadOnly bool
	// PurgeBatch is how many rows one purge transaction deletes: small
	// enough that a writer waiting behind it waits milliseconds.
	// Default: 1000.
	PurgeBatch int
	// PurgePause is the rest between two purge transactions, at least as
	// long as the transaction took, so that writers of other processes,
	// whose busy handlers poll, get the lock. Default: 20ms; negative: none.
	PurgePause time.Duration
	// NoFileWatch makes Watch poll every WatchConfig.Poll instead of
	// watching the file's directory with inotify: for tests of the poll,
	// and file systems whose writers inotify does not see.
	NoFileWatch bool
}

// Store is the queue's rows in one SQLite file: it implements store.Engine.
// It is safe for concurrent use by many goroutines, and several processes
// may open the same file.
type Store struct {
	path   string
	abs    string
	cfg    Config
	clock  clock.Clock
	leases *store.Leases // judges leases across steps of clock
	log    *slog.Logger
	w      *sql.DB // the single writer connection
	r      *sql.DB // read-only pool
	ckpt   *sql.DB // one connection for background checkpoints
	turn   *turnLock

	stmtMu sync.RWMutex
	stmts  map[string]*sql.Stmt // prepared on w
	// readStmts are the reads a pool's loop makes at most trips (see
	// readStmt), prepared on r. Under stmtMu.
	readStmts map[string]*sql.Stmt

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
	// cancelAsked is closed, and replaced, when RequestCancel marks a
	// running job: a pool of this process may hold its lease, and the
	// watches, which pass over this process's own commits, pass it on
	// (see Watch). Under mu.
	cancelAsked chan struct{}

	groupMu sync.Mutex
	group   groupQueue // enqueues waiting to share a transaction

	types typesCache // the JSON arrays of the pool's type lists
	// noVersions is set when a file older than job versions was opened
	// read-only, which migrates nothing: it has no version column, and its
	// jobs are all of version 1 (see jobsQuery).
	noVersions bool
	// noRetriedAt is the same for a file older than the record of an
	// operator's retries: its jobs show none (see jobsQuery).
	noRetriedAt bool
	// noPoolConfig is the same for a file older than the record of the
	// config each daemon runs: its pools show none (see Daemons).
	noPoolConfig bool

	// watchFileFunc, when set (by tests, before Watch), stands in for
	// watchFile.
	watchFileFunc func(path string) (*fileWatch, error)
}

// Open opens the store in the SQLite file at path, creating it and applying
// missing migrations as needed. It refuses a file written by a newer schema
// (ErrSchemaTooNew).
func Open(ctx context.Context, path string, cfg Config) (*Store, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
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
	s := &Store{path: path, abs: abs, cfg: cfg, clock: cfg.Clock, leases: store.NewLeases(cfg.Clock), log: cfg.Logger, waiters: map[chan struct{}]struct{}{},
		cancelAsked: make(chan struct{})}
	if err := s.open(ctx); err != nil {
		// Everything the open got so far, the write turn's lock files
		// that a migration took among them.
		s.closeDBs()
		return nil, fmt.Errorf("open queue %s: %w", path, err)
	}
	return s, nil
}

// open opens s's connections, migrates the file or checks its version, and
// prepares the statements. On error, s holds what it opened, for closeDBs.
func (s *Store) open(ctx context.Context) (err error) {
	cfg, abs := s.cfg, s.abs
	if !cfg.ReadOnly {
		if _, err := createPrivate(abs); err != nil {
			return err
		}
		s.turn = newTurnLock(abs, cfg.Clock)
		// One connection: writers in this process queue for it in Go instead
		// of meeting SQLITE_BUSY, and a statement prepared once stays prepared.
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
	var versioned int
	if err := s.r.QueryRowContext(ctx, versionsColumnSQL).Scan(&versioned); err != nil {
		return err
	}
	s.noVersions = versioned == 0
	var retried int
	if err := s.r.QueryRowContext(ctx, retriedAtColumnSQL).Scan(&retried); err != nil {
		return err
	}
	s.noRetriedAt = retried == 0
	var configured int
	if err := s.r.QueryRowContext(ctx, poolConfigColumnSQL).Scan(&configured); err != nil {
		return err
	}
	s.noPoolConfig = configured == 0
	return nil
}

// dsn builds the connection string. Pragmas live here so that every pooled
// connection gets them; a PRAGMA run with Exec reaches one connection only.
// synchronous=NORMAL is the per-connection default: see the package comment
// for the writes that switch to FULL.
func dsn(path string, busy time.Duration, readOnly bool) string {
	v := url.Values{}
	v.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	v.Add("_pragma", "journal_mode(WAL)")
	v.Add("_pragma", "foreign_keys(1)")
	v.Add("_pragma", "synchronous(NORMAL)")
	// Statement journals and sorts stay in memory: a big materialisation
	// otherwise writes its statement journal to a temporary file.
	v.Add("_pragma", "temp_store(MEMORY)")
	// A running Pool checkpoints the WAL in the background (passive, on a
	// connection of its own), so the writer seldom reaches this threshold
	// and commits without copying pages back and syncing the database file.
	// Processes without a pool (the CLI) still checkpoint past it.
	v.Add("_pragma", "wal_autocheckpoint(10000)")
	if readOnly {
		v.Add("_pragma", "query_only(1)")
	} else {
		v.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + v.Encode()
}

// Name returns the database file's path as given to Open.
func (s *Store) Name() string { return s.path }

// Clock returns the clock of Config: the store's time.
func (s *Store) Clock() clock.Clock { return s.clock }

// Close closes the database. Pools using s must have returned from Run.
func (s *Store) Close() error {
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

var errReadOnly = errors.New("database opened read-only")

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// Most opens find the schema current: check without the write lock,
	// which a busy daemon and many CLI processes contend for.
	var v int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v == len(ms) {
		return nil
	}
	for {
		var done bool
		err := s.inTx(ctx, true, func(tx txn) error {
			var v int
			if err := tx.queryRow(ctx, "PRAGMA user_version").Scan(&v); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			if v > len(ms) {
				return fmt.Errorf("%w: file has version %d, this program knows up to %d", store.ErrSchemaTooNew, v, len(ms))
			}
			if v == len(ms) {
				done = true
				return nil
			}
			m := ms[v]
			if _, err := tx.exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			// user_version is part of the database header, so it commits or
			// rolls back with the migration's statements.
			if _, err := tx.exec(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}

func (s *Store) checkVersion(ctx context.Context) error {
	var v int
	if err := s.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if n := SchemaVersion(); v > n {
		return fmt.Errorf("%w: file has version %d, this program knows up to %d", store.ErrSchemaTooNew, v, n)
	}
	if v == 0 {
		return errors.New("database has no scheduler schema yet (start the daemon once)")
	}
	return nil
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	return ok && e.Code()&0xff == sqliteBusy
}

const sqliteBusy = 5 // SQLITE_BUSY

// retryBusy runs fn until it does not fail with SQLITE_BUSY, for up to the
// write wait. While another process creates the file or switches it to
// WAL, SQLite can return SQLITE_BUSY at once, without calling the busy
// handler that the busy timeout configures.
func (s *Store) retryBusy(ctx context.Context, fn func(context.Context) error) error {
	deadline := s.clock.Monotonic() + max(s.cfg.BusyTimeout, s.cfg.WriteWait)
	wait := time.Millisecond
	for {
		err := fn(ctx)
		if !isBusy(err) || s.clock.Monotonic() >= deadline {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-s.clock.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// inTx runs fn in one IMMEDIATE transaction on the writer connection. durable
// commits it with synchronous=FULL, for writes acknowledged outside the
// process.
func (s *Store) inTx(ctx context.Context, durable bool, fn func(tx txn) error) (err error) {
	if s.w == nil {
		return errReadOnly
	}
	var misses []string
	defer func() {
		// Runs after the connection is released below: preparing needs it.
		if len(misses) > 0 {
			s.keep(context.WithoutCancel(ctx), misses)
		}
	}()
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if durable {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
			return err
		}
		defer func() {
			// The connection is reused: put it back to the default even if
			// ctx is done by now.
			if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous=NORMAL"); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	unlock, err := s.turn.lock(ctx, s.cfg.WriteWait)
	if err != nil {
		return err
	}
	defer unlock()
	stx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tx := txn{tx: stx, s: s, misses: &misses, counts: store.CountDeltas{}, tail: &countTail{inserted: map[string]int64{}}}
	if err := fn(tx); err != nil {
		tx.tx.Rollback()
		return err
	}
	if err := tx.writeCounts(ctx); err != nil {
		tx.tx.Rollback()
		return err
	}
	return tx.tx.Commit()
}

// Subscribe returns a channel that receives a value (coalesced) after each
// enqueue through s, and a function that removes it.
func (s *Store) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.waiters[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.waiters, ch)
		s.mu.Unlock()
	}
}

func (s *Store) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func nullMS(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

func nullStr(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

func capText(s string) string {
	if len(s) > store.MaxOutput {
		return s[:store.MaxOutput/2] + "\n…\n" + s[len(s)-store.MaxOutput/2:]
	}
	return s
}

// createPrivate creates an empty file with mode 0600 if none exists at path,
// whatever the umask, and reports whether it did. The database and its
// backups hold job output and errors; SQLite gives the -wal and -shm files
// the mode of the database file. An existing file keeps the mode its owner
// gave it. O_EXCL also means that the descriptor closed here is never one of
// a file this process's SQLite connections hold locks on (closing such a
// descriptor would drop those POSIX locks).
func createPrivate(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The umask can only narrow 0600; Chmod makes it exactly 0600.
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

// cancelSignal returns the channel that the next cancel request of a
// running job through s closes.
func (s *Store) cancelSignal() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelAsked
}

// signalCancel tells the watches of s that a running job was asked to
// cancel, by a commit of s they pass over.
func (s *Store) signalCancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.cancelAsked)
	s.cancelAsked = make(chan struct{})
}

// The engine implements every role.
var _ store.Engine = (*Store)(nil)
