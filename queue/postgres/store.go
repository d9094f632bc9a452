package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"regexp"
	"runtime"
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

// The engine implements every role.
var _ store.Engine = (*Store)(nil)

// Store is the PostgreSQL engine: it implements store.Engine. It is safe
// for concurrent use.
type Store struct {
	*store.Base // the engine-neutral flow, on the statements of statements.go

	pool    *pgxpool.Pool
	name    string
	channel string // the NOTIFY channel of the store's schema
	clock   *serverClock
	log     *slog.Logger
	cfg     Config
	schema  schema // what an old schema opened read-only lacks

	stop chan struct{} // closed by Close: stops the clock's measurements
	wg   sync.WaitGroup

	notifyOwed chan struct{} // buffer of one: a NOTIFY is owed (see notify)
	// cancelOwed is set when the owed NOTIFY must reach this store's own
	// watch too (a cancel request; see notifyCancel).
	cancelOwed atomic.Bool
	// sender is the payload of this store's NOTIFYs that only tell of
	// jobs made ready: its own watch passes over them (see notify).
	sender string
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
	// planner's estimate of a correlated subquery over many jobs passes
	// jit_above_cost, so a fresh backend would compile a quick read for far
	// longer than it runs.
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
		clock: &serverClock{base: cfg.Clock}, stop: make(chan struct{}),
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
	// After the first measurement, which is no step of the clock.
	s.Base = store.NewBase(backend{s}, s.statements(), s.Clock(), s.log, store.PurgeConfig{Batch: cfg.PurgeBatch})
	s.wg.Add(1)
	go s.notifyLoop()
	return s, nil
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
