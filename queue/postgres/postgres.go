// Package postgres is the PostgreSQL storage engine of the queue: one
// database shared by any number of nodes. It implements store.Engine in the
// terms of github.com/scheduler-run/scheduler/queue/store, with the rules of the SQLite engine, and
// adds what many nodes need: claims that skip the rows another node holds
// (FOR UPDATE SKIP LOCKED), a clock that follows the database server's, and
// wake-ups through LISTEN/NOTIFY.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"net/url"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Config configures a Store. Zero values select the defaults shown.
type Config struct {
	// Clock is the clock the store corrects to the database server's.
	// Default: clock.Real{}.
	Clock clock.Clock
	// LocalClock makes the store decide with Clock as it is, without
	// following the server's clock: for tests that drive a clock.Fake.
	LocalClock bool
	Logger     *slog.Logger // Default: discard.
	// PurgeBatch is how many rows one purge transaction deletes. Default: 1000.
	PurgeBatch int
	// ReadOnly opens the schema for reads only, as an operator's read
	// command does: no migration (a schema without the scheduler's tables
	// is store.ErrNotFound, and stays without them), and every transaction
	// read-only on the server.
	ReadOnly bool
	// MaxConns bounds the store's pool of connections, at least 2 (Maintain
	// holds one while it works on another; Watch holds one outside the
	// pool). Default: max(4, GOMAXPROCS).
	MaxConns int

	// editConn, when set, changes the connections' configuration: for
	// tests that count what a connection sends.
	editConn func(*pgx.ConnConfig)
}

// Store is the PostgreSQL engine. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	name    string
	channel string // the NOTIFY channel of the store's schema
	clock   *serverClock
	leases  *store.Leases // judges leases across steps of Clock()
	log     *slog.Logger
	cfg     Config
	// noVersions is set when a schema older than job versions was opened
	// read-only, which migrates nothing: it has no version column, and its
	// jobs are all of version 1 (see jobsQuery).
	noVersions bool
	// noRetriedAt is the same for a schema older than the record of an
	// operator's retries: its jobs show none (see jobsQuery).
	noRetriedAt bool
	// noCounts is the same for a schema older than job_counts: Stats and
	// Handlers count the rows.
	noCounts bool
	// noPoolConfig is the same for a schema older than the record of the
	// config each daemon runs: its pools show none (see Daemons).
	noPoolConfig bool

	stop chan struct{} // closed by Close: stops the clock's measurements
	wg   sync.WaitGroup

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}

	notifyOwed chan struct{} // buffer of one: a NOTIFY is owed (see notify)
	// cancelOwed is set when the owed NOTIFY must reach this store's own
	// watch too (a cancel request; see notifyCancel).
	cancelOwed atomic.Bool
	// sender is the payload of this store's NOTIFYs that only tell of
	// jobs made ready: its own watch passes over them (see notify).
	sender string
}

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []migration
	for i, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", base, i+1)
		}
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	return out, nil
}

// SchemaVersion is the version of the schema this program writes.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// Open connects to the database at dsn (a URL or key=value string, as pgx
// reads it), migrates the schema of the connection's search_path, and
// measures the server's clock. Several nodes may open the same database at
// once: migrations run one at a time under an advisory lock.
func Open(ctx context.Context, dsn string, cfg Config) (*Store, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PurgeBatch <= 0 {
		cfg.PurgeBatch = 1000
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = max(4, runtime.GOMAXPROCS(0))
	}
	cfg.MaxConns = max(cfg.MaxConns, 2)
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", redact(dsn), err)
	}
	pcfg.MaxConns = int32(cfg.MaxConns)
	// No JIT compilation: every statement of the store is short, and the
	// planner's estimate of a correlated subquery over a million jobs (the
	// notifications of open alarms) passes jit_above_cost, so a read taking
	// under a millisecond paid some 240 ms of compiling on a fresh backend.
	pcfg.ConnConfig.RuntimeParams["jit"] = "off"
	if cfg.ReadOnly {
		pcfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if cfg.editConn != nil {
		cfg.editConn(pcfg.ConnConfig)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", redact(dsn), err)
	}
	s := &Store{pool: pool, name: redact(dsn), log: cfg.Logger, cfg: cfg,
		clock: &serverClock{base: cfg.Clock}, stop: make(chan struct{}), waiters: map[chan struct{}]struct{}{},
		notifyOwed: make(chan struct{}, 1), sender: newSender()}
	var schema string
	if cfg.ReadOnly {
		schema, err = s.readSchema(ctx)
	} else {
		err = s.migrate(ctx)
		if err == nil {
			err = pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema)
		}
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open %s: %w", s.name, err)
	}
	s.channel = channelName(schema)
	if !cfg.LocalClock {
		if err := s.clock.measure(ctx, pool); err != nil {
			pool.Close()
			return nil, fmt.Errorf("open %s: measure the server's clock: %w", s.name, err)
		}
		s.wg.Add(1)
		go s.followClock()
	}
	s.leases = store.NewLeases(s.Clock()) // after the first measurement, which is no step
	s.wg.Add(1)
	go s.notifyLoop()
	return s, nil
}

// migrationLock is the first key of the advisory lock that migrations take;
// the second is the schema's hash, so that schemas migrate independently.
const migrationLock = 0x5343_4844 // "SCHD"

// migrate applies the migrations the schema lacks, in one transaction that
// holds an advisory lock, so that nodes starting together migrate once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, migrationLock); err != nil {
			return fmt.Errorf("lock migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer     PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return err
		}
		if have > len(ms) {
			return fmt.Errorf("schema version %d, this program knows %d: %w", have, len(ms), store.ErrSchemaTooNew)
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}

// schemaSQL reads, in one statement, what a read-only open must know of
// the schema, which it does not migrate: its name, whether the scheduler's
// tables are there, and which of the tables and columns added by later
// migrations it has (see Store.noVersions, noRetriedAt, noCounts and
// noPoolConfig). It
// reads pg_catalog: the views of information_schema cost a fresh backend
// 2 to 14 ms each to plan, the most of an operator's -status.
const schemaSQL = `SELECT current_schema(), to_regclass('schema_migrations') IS NOT NULL,
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('jobs') AND attname = 'version' AND NOT attisdropped),
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('jobs') AND attname = 'retried_at' AND NOT attisdropped),
	to_regclass('job_counts') IS NOT NULL,
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('pools') AND attname = 'config_sha256' AND NOT attisdropped)`

// readSchema is migrate for a read-only store: the schema must hold the
// scheduler's tables, of a version this program knows. It returns the
// schema's name. Its two statements run once per store, so they go
// unprepared (the simple protocol): one round trip each, where preparing
// costs a second.
func (s *Store) readSchema(ctx context.Context) (string, error) {
	ms, err := migrations()
	if err != nil {
		return "", err
	}
	var schema string
	var exists, versioned, retried, counted, configured bool
	if err := s.pool.QueryRow(ctx, schemaSQL, pgx.QueryExecModeSimpleProtocol).Scan(&schema, &exists, &versioned, &retried, &counted, &configured); err != nil {
		return "", err
	}
	if !exists {
		return "", fmt.Errorf("no scheduler tables in this schema (has a daemon started on it?): %w", store.ErrNotFound)
	}
	var have int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`, pgx.QueryExecModeSimpleProtocol).Scan(&have); err != nil {
		return "", err
	}
	if have > len(ms) {
		return "", fmt.Errorf("schema version %d, this program knows %d: %w", have, len(ms), store.ErrSchemaTooNew)
	}
	s.noVersions, s.noRetriedAt, s.noCounts, s.noPoolConfig = !versioned, !retried, !counted, !configured
	return schema, nil
}

var notChannel = regexp.MustCompile(`[^a-z0-9_]+`)

// channelName is the NOTIFY channel of a schema: "scheduler_" and the
// schema's name in lower case letters, digits and '_', so that stores on
// different schemas of one database do not wake each other. A name too
// long for an identifier (63 bytes) is cut and ends with a hash of the
// whole.
func channelName(schema string) string {
	ch := "scheduler_" + notChannel.ReplaceAllString(strings.ToLower(schema), "_")
	if len(ch) > 63 {
		h := fnv.New32a()
		h.Write([]byte(schema))
		ch = fmt.Sprintf("%s_%08x", ch[:54], h.Sum32())
	}
	return ch
}

// redact returns dsn without its password.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
		q := u.Query()
		if q.Has("password") {
			q.Del("password")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return regexp.MustCompile(`\s*password\s*=\s*('([^'\\]|\\.)*'|\S*)`).ReplaceAllString(dsn, "")
}

// Name returns the database's address without its password.
func (s *Store) Name() string { return s.name }

// Clock returns the clock the store decides with: the server's, as
// measured, or Config.Clock itself with Config.LocalClock.
func (s *Store) Clock() clock.Clock {
	if s.cfg.LocalClock {
		return s.cfg.Clock
	}
	return s.clock
}

func (s *Store) now() time.Time { return s.Clock().Now() }

// Close stops the clock's measurements, sends the NOTIFY still owed, and
// closes the connections.
func (s *Store) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	s.wg.Wait()
	s.pool.Close()
	return nil
}

// Ping reads a little of the two tables the daemon lives on.
func (s *Store) Ping(ctx context.Context) error {
	var maxID *int64
	var cursors int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT max(id) FROM jobs), (SELECT count(*) FROM cursors)`).Scan(&maxID, &cursors); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// Subscribe returns a channel that receives a value (coalesced) after each
// commit of this Store that makes a job ready.
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

// wake tells the subscribers of this Store that a commit made work ready,
// and asks for a NOTIFY to tell the other nodes (see notify).
func (s *Store) wake() {
	s.notify()
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// notifySQL wakes the watches of every node on the schema when the
// transaction it runs in commits: EnqueueTx's, in the caller's
// transaction. The store's own commits notify after they commit (see
// notify). PostgreSQL delivers one notification per transaction for
// repeats of a channel and payload.
const notifySQL = `SELECT pg_notify($1, '')`

// ts is t as the store writes it: UTC, truncated to the millisecond, so
// that what is read back equals what was written.
func ts(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// nullTS is ts(t), or NULL for the zero time.
func nullTS(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: ts(t), Valid: true}
}

// fromTS reads a nullable timestamptz: the zero time for NULL.
func fromTS(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// capText caps an attempt's error or output text at MaxOutput bytes, as
// the SQLite engine does, and makes it text PostgreSQL accepts: what a
// command printed may hold bytes that are not UTF-8, or NULs, which a text
// column refuses; they become U+FFFD.
func capText(s string) string {
	if len(s) > store.MaxOutput {
		s = s[:store.MaxOutput/2] + "\n…\n" + s[len(s)-store.MaxOutput/2:]
	}
	return cleanText(s)
}

// cleanText replaces what a text column refuses (invalid UTF-8, NUL) by U+FFFD.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// errNoRows reports pgx's "no rows in result set".
func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// The engine implements every role.
var _ store.Engine = (*Store)(nil)
