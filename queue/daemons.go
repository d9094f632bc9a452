package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"scheduler/internal/clock"
)

// Heartbeat defaults.
const (
	// DefaultHeartbeatEvery is how often a daemon refreshes its row.
	DefaultHeartbeatEvery = 5 * time.Second
	// DaemonAliveWithin is how recent a daemon's last heartbeat must be for
	// it to count as alive: several missed beats, so that a daemon slowed by
	// a busy disk is not reported dead.
	DaemonAliveWithin = 30 * time.Second
	// daemonRowsKept is how long the row of a daemon that did not stop
	// cleanly (a crash, SIGKILL) is kept before a starting daemon deletes it.
	daemonRowsKept = 7 * 24 * time.Hour
)

// HeartbeatConfig configures a Heartbeat. Zero values select the defaults
// shown.
type HeartbeatConfig struct {
	Owner   string        // The daemon's name, as in leases. Required.
	Version string        // The program's version. Default: "dev".
	Every   time.Duration // Period of the refresh. Default: DefaultHeartbeatEvery.
	Clock   clock.Clock   // Default: the Queue's clock.
	Logger  *slog.Logger  // Default: the Queue's logger.
}

// Heartbeat records a running daemon in the daemons table: a row inserted by
// Run, its last_seen refreshed every Every (an UPDATE of one row, not
// fsynced: a lost beat is only a beat late), and deleted when Run returns.
// Operators read the rows with Daemons to tell whether a daemon is alive.
type Heartbeat struct {
	q        *Queue
	cfg      HeartbeatConfig
	host     string
	recorded bool // Record has written the row; only the goroutine of Record and Run
}

// NewHeartbeat returns a Heartbeat for q.
func NewHeartbeat(q *Queue, cfg HeartbeatConfig) (*Heartbeat, error) {
	switch {
	case q == nil:
		return nil, errors.New("new heartbeat: nil queue")
	case cfg.Owner == "":
		return nil, errors.New("new heartbeat: empty owner")
	case cfg.Every < 0:
		return nil, fmt.Errorf("new heartbeat: negative period %s", cfg.Every)
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultHeartbeatEvery
	}
	if cfg.Clock == nil {
		cfg.Clock = q.clock
	}
	if cfg.Logger == nil {
		cfg.Logger = q.log
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Heartbeat{q: q, cfg: cfg}, nil
}

const insertDaemonSQL = `INSERT INTO daemons (owner, pid, host, version, started_at, last_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?5)
ON CONFLICT (owner) DO UPDATE SET last_seen = excluded.last_seen`

const forgetDaemonsSQL = `DELETE FROM daemons WHERE last_seen < ?`

const beatDaemonSQL = `UPDATE daemons SET last_seen = ? WHERE owner = ?`

const deleteDaemonSQL = `DELETE FROM daemons WHERE owner = ?`

// Record writes the daemon's row, so that it is seen alive from then on, and
// deletes the rows of daemons not seen for a week. Run calls it unless it
// was called before; call it before Run to be seen before a readiness
// signal.
func (h *Heartbeat) Record(ctx context.Context) error {
	h.host, _ = os.Hostname()
	now := h.cfg.Clock.Now()
	err := h.q.inTx(ctx, false, func(tx txn) error {
		if _, err := tx.ExecContext(ctx, forgetDaemonsSQL, ms(now.Add(-daemonRowsKept))); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, insertDaemonSQL, h.cfg.Owner, os.Getpid(), h.host, h.cfg.Version, ms(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("record daemon %s: %w", h.cfg.Owner, err)
	}
	h.recorded = true
	return nil
}

// Run records the daemon (see Record), refreshes its row until ctx is done,
// then deletes it and returns nil. A failed refresh is logged and tried
// again at the next beat: the daemon keeps running jobs without it. Run
// fails only when the first row cannot be written.
func (h *Heartbeat) Run(ctx context.Context) error {
	if !h.recorded {
		if err := h.Record(ctx); err != nil {
			return err
		}
	}
	defer func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := h.q.inTx(bg, false, func(tx txn) error {
			_, err := tx.ExecContext(bg, deleteDaemonSQL, h.cfg.Owner)
			return err
		}); err != nil {
			h.cfg.Logger.ErrorContext(bg, "daemon row not deleted at stop", "owner", h.cfg.Owner, "err", err)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-h.cfg.Clock.After(h.cfg.Every):
		}
		err := h.q.inTx(ctx, false, func(tx txn) error {
			// A row deleted by hand, or by a daemon that took this one for
			// long dead, is written again.
			_, err := tx.ExecContext(ctx, insertDaemonSQL, h.cfg.Owner, os.Getpid(), h.host, h.cfg.Version, ms(h.cfg.Clock.Now()))
			return err
		})
		if err != nil && ctx.Err() == nil {
			h.cfg.Logger.WarnContext(ctx, "daemon heartbeat not recorded", "owner", h.cfg.Owner, "err", err)
		}
	}
}

// Daemon is a daemon's row: a running daemon, or one that stopped without
// deleting it.
type Daemon struct {
	Owner     string
	PID       int
	Host      string
	Version   string
	StartedAt time.Time
	LastSeen  time.Time
}

// Alive reports whether d's last heartbeat is within DaemonAliveWithin of now.
func (d Daemon) Alive(now time.Time) bool {
	return now.Sub(d.LastSeen) <= DaemonAliveWithin
}

const daemonsSQL = `SELECT owner, pid, host, version, started_at, last_seen FROM daemons ORDER BY last_seen DESC LIMIT 100`

const hasDaemonsSQL = `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'daemons'`

// Daemons returns the recorded daemons, most recently seen first (at most
// 100). A database written by a program that records no daemons, opened
// read-only, has none.
func (q *Queue) Daemons(ctx context.Context) ([]Daemon, error) {
	var n int
	if err := q.r.QueryRowContext(ctx, hasDaemonsSQL).Scan(&n); err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := q.r.QueryContext(ctx, daemonsSQL)
	if err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	defer rows.Close()
	var out []Daemon
	for rows.Next() {
		var d Daemon
		var st, seen int64
		if err := rows.Scan(&d.Owner, &d.PID, &d.Host, &d.Version, &st, &seen); err != nil {
			return nil, fmt.Errorf("read daemons: %w", err)
		}
		d.StartedAt, d.LastSeen = time.UnixMilli(st).UTC(), time.UnixMilli(seen).UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read daemons: %w", err)
	}
	return out, nil
}
