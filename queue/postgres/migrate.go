package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

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
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []migration
	// Numbers ascend, each used once; a number may be missing, reserved
	// for a change made beside this one.
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || v < 1 || len(out) > 0 && v <= out[len(out)-1].version {
			return nil, fmt.Errorf("migration %s: want a number above the one before", base)
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
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrationLock keys, with the schema's hash, the migrations' advisory lock,
// so schemas migrate independently.
const migrationLock = 0x5343_4844 // "SCHD"

// migrate applies the migrations the schema lacks in one transaction under
// the lock, so nodes starting together migrate once.
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
		if last := ms[len(ms)-1].version; have > last {
			return fmt.Errorf("schema version %d, this program knows %d: %w", have, last, store.ErrSchemaTooNew)
		}
		for _, m := range ms {
			if m.version <= have {
				continue
			}
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

// schema is what a read-only schema lacks of the current one, which reads
// make do without.
type schema struct {
	noVersions   bool // jobs have no version column: all are of version 1
	noRetriedAt  bool // jobs record no operator's retry
	noAlarmKey   bool // jobs name no alarm they notify
	noDiscarded  bool // jobs record no discard
	noCounts     bool // no job_counts: counting reads every job
	noPoolConfig bool // pools record no config
	noFanIns     bool // no fanins table
	noIncidents  bool // no incidents and silences tables
	noLive       bool // no live_output table, and pools record no workers
}

// schemaSQL reads what a read-only open must know: the schema's name, whether
// the tables exist, and which later columns it has. It reads pg_catalog:
// information_schema is slow to plan on a fresh backend.
const schemaSQL = `SELECT current_schema(), to_regclass('schema_migrations') IS NOT NULL,
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('jobs') AND attname = 'version' AND NOT attisdropped),
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('jobs') AND attname = 'retried_at' AND NOT attisdropped),
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('jobs') AND attname = 'alarm_key' AND NOT attisdropped),
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('jobs') AND attname = 'discarded_by' AND NOT attisdropped),
	to_regclass('job_counts') IS NOT NULL, to_regclass('fanins') IS NOT NULL,
	EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('pools') AND attname = 'config_sha256' AND NOT attisdropped),
	to_regclass('incidents') IS NOT NULL, to_regclass('live_output') IS NOT NULL`

// readSchema is migrate for a read-only store: the schema must hold the
// tables, of a known version. It returns the schema's name. Its two
// statements run once, unprepared, to spare a round trip.
func (s *Store) readSchema(ctx context.Context) (string, error) {
	ms, err := migrations()
	if err != nil {
		return "", err
	}
	var name string
	var exists, versioned, retried, alarmKey, discarded, counted, fanIns, configured, incidents, live bool
	if err := s.pool.QueryRow(ctx, schemaSQL, pgx.QueryExecModeSimpleProtocol).Scan(&name, &exists, &versioned, &retried, &alarmKey, &discarded, &counted, &fanIns, &configured, &incidents, &live); err != nil {
		return "", err
	}
	if !exists {
		return "", fmt.Errorf("no scheduler tables in this schema (has a daemon started on it?): %w", store.ErrNotFound)
	}
	var have int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`, pgx.QueryExecModeSimpleProtocol).Scan(&have); err != nil {
		return "", err
	}
	if last := ms[len(ms)-1].version; have > last {
		return "", fmt.Errorf("schema version %d, this program knows %d: %w", have, last, store.ErrSchemaTooNew)
	}
	s.schema = schema{noVersions: !versioned, noRetriedAt: !retried, noAlarmKey: !alarmKey, noDiscarded: !discarded, noCounts: !counted, noPoolConfig: !configured, noFanIns: !fanIns, noIncidents: !incidents,
		noLive: !live}
	return name, nil
}
