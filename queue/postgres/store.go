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
	Clock      clock.Clock  // Corrected to the server's clock. Default: clock.Real{}.
	LocalClock bool         // Decide with Clock as it is: for tests driving a clock.Fake.
	Logger     *slog.Logger // Default: discard.
	PurgeBatch int          // Rows one purge transaction deletes. Default: 1000.
	// ReadOnly opens the schema for reads, as operators' commands do: no
	// migration (no tables is store.ErrNotFound), every transaction
	// read-only on the server.
	ReadOnly bool
	// MaxConns bounds the connection pool, at least 2 (Maintain holds one
	// while using another). Default: max(4, GOMAXPROCS).
	MaxConns int

	editConn func(*pgx.ConnConfig) // set by tests
}

var _ store.Engine = (*Store)(nil)

// Store is the PostgreSQL engine; it implements store.Engine and is safe for
// concurrent use.
type Store struct {
	*store.Base // the shared flow, on statements.go's statements

	pool    *pgxpool.Pool
	name    string
	channel string // the NOTIFY channel of the store's schema
	clock   *serverClock
	log     *slog.Logger
	cfg     Config
	schema  schema // what an old schema opened read-only lacks

	stop chan struct{} // closed by Close: stops clock measurements
	wg   sync.WaitGroup

	notifyOwed chan struct{} // buffer of one: a NOTIFY is owed (see notify)
	cancelOwed atomic.Bool   // the owed NOTIFY is a cancel's: this store's watch hears it too
	sender     string        // payload of this store's ready NOTIFYs, which its watch skips
}

// Open connects to dsn (a URL or key=value string, as pgx reads it), migrates
// the search_path's schema under an advisory lock, and measures the server's
// clock.
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
	// No JIT: the planner's estimate of a correlated subquery over many
	// jobs passes jit_above_cost, and a fresh backend would compile a
	// quick read for far longer than it runs.
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
	// After the first measurement, which is no clock step.
	s.Base = store.NewBase(backend{s}, s.statements(), s.Clock(), s.log, store.PurgeConfig{Batch: cfg.PurgeBatch})
	s.wg.Add(1)
	go s.notifyLoop()
	return s, nil
}

var notChannel = regexp.MustCompile(`[^a-z0-9_]+`)

// channelName is a schema's NOTIFY channel, "scheduler_" and its name in
// [a-z0-9_], so other schemas' stores do not wake each other; past 63 bytes
// it is cut and ends with a hash of the whole.
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

// Clock returns the server's clock as measured, or Config.Clock with
// Config.LocalClock.
func (s *Store) Clock() clock.Clock {
	if s.cfg.LocalClock {
		return s.cfg.Clock
	}
	return s.clock
}

func (s *Store) now() time.Time { return s.Clock().Now() }

// Close stops clock measurements, sends any owed NOTIFY, and closes the pool.
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

// notifySQL wakes every node's watch when its transaction commits: for
// EnqueueTx, in the caller's. PostgreSQL folds repeats into one.
const notifySQL = `SELECT pg_notify($1, '')`

// ts is t as stored: UTC, to the millisecond, so it reads back equal.
func ts(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

func nullTS(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: ts(t), Valid: true}
}

// cleanText replaces what a text column refuses (invalid UTF-8, NUL).
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
