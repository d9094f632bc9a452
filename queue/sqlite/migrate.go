package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/scheduler-run/scheduler/queue/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

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
	// Numbers ascend, each used once; a number may be missing, reserved
	// for a change made beside this one.
	for i, m := range ms {
		if m.version < 1 || i > 0 && m.version == ms[i-1].version {
			return nil, fmt.Errorf("migration %s: number %d used twice or not positive", m.name, m.version)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// Most opens find the schema current: check without the contended
	// write lock.
	var v int
	if err := s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v == SchemaVersion() {
		return nil
	}
	for {
		var done bool
		err := s.inTx(ctx, true, func(tx txn) error {
			var err error
			done, err = applyNext(ctx, tx, ms)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

// applyNext applies in tx the first migration the file lacks, or reports none
// is left.
func applyNext(ctx context.Context, tx txn, ms []migration) (done bool, err error) {
	var v int
	if err := tx.queryRow(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	last := ms[len(ms)-1].version
	if v > last {
		return false, fmt.Errorf("%w: file has version %d, this program knows up to %d", store.ErrSchemaTooNew, v, last)
	}
	if v == last {
		return true, nil
	}
	i := sort.Search(len(ms), func(i int) bool { return ms[i].version > v })
	m := ms[i]
	if _, err := tx.exec(ctx, m.sql); err != nil {
		return false, fmt.Errorf("apply migration %s: %w", m.name, err)
	}
	// user_version is in the header, so it commits with the migration.
	if _, err := tx.exec(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return false, fmt.Errorf("apply migration %s: %w", m.name, err)
	}
	return false, nil
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

// schema is what a read-only file lacks of the current schema: unmigrated, an
// older program's file keeps its older tables, and reads make do.
type schema struct {
	noVersions   bool // jobs have no version column: all are of version 1
	noRetriedAt  bool // jobs record no operator's retry
	noAlarmKey   bool // jobs name no alarm they notify
	noDiscarded  bool // jobs record no discard
	noPoolConfig bool // pools record no config
	noPools      bool // no pools table
	noConfig     bool // no running_config table
	noFanIns     bool // no fanins table
	noIncidents  bool // no incidents and silences tables
	noLive       bool // no live_output table, and pools record no workers
	counts       int  // how job counts are kept: countsMarked, countsTable or countsNone
}

// How a file keeps its job counts.
const (
	countsNone   = iota // none: counting means reading every job
	countsTable         // job_counts, every insert counted by a trigger
	countsMarked        // job_counts and the jobs past the count mark
)

// schemaSQL reads in one statement which later tables, views and columns the
// file has.
const schemaSQL = `SELECT
	(SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'version'),
	(SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'retried_at'),
	(SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'alarm_key'),
	(SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'discarded_by'),
	(SELECT count(*) FROM pragma_table_info('pools') WHERE name = 'config_sha256'),
	(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'pools'),
	(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'running_config'),
	(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'job_counts' OR type = 'view' AND name = 'job_counts_now'),
	(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'fanins'),
	(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'incidents'),
	(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'live_output')`

func readSchema(ctx context.Context, db *sql.DB) (schema, error) {
	var versions, retried, alarmKey, discarded, poolConfig, pools, config, counts, fanIns, incidents, live int
	if err := db.QueryRowContext(ctx, schemaSQL).Scan(&versions, &retried, &alarmKey, &discarded, &poolConfig, &pools, &config, &counts, &fanIns, &incidents, &live); err != nil {
		return schema{}, fmt.Errorf("read schema: %w", err)
	}
	return schema{noVersions: versions == 0, noRetriedAt: retried == 0, noAlarmKey: alarmKey == 0, noDiscarded: discarded == 0, noPoolConfig: poolConfig == 0,
		noPools: pools == 0, noConfig: config == 0, noFanIns: fanIns == 0, counts: counts, noIncidents: incidents == 0, noLive: live == 0}, nil
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	e, ok := errors.AsType[*sqlite.Error](err)
	return ok && e.Code()&0xff == sqliteBusy
}

const sqliteBusy = 5 // SQLITE_BUSY

// retryBusy runs fn while it fails with SQLITE_BUSY, up to the write wait:
// while another process creates the file or switches it to WAL, SQLite may
// return it at once, without the busy handler.
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
