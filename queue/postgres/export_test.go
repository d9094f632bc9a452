package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Redact is redact, for tests.
var Redact = redact

// AlarmQueries are the reads of the alarms' evaluation, for the plan test,
// with arguments.
var AlarmQueries = map[string]struct {
	SQL   string
	Args  []any
	Index string
}{
	"instant jobs":  {instantJobsSQL, []any{"s", t1, t2, 10}, "jobs_schedule_at"},
	"dead jobs":     {deadJobsSQL, []any{t1, 10}, "jobs_dead_finished"},
	"skips between": {skipsBetweenSQL, []any{"s", t1, t2, "misfire", 10}, "skips_schedule_at"},
	"open alarms":   {openAlarmsSQL, []any{10}, "alarms_open"},
	// Whether a notification of each is under way: one seek of jobs_alarm.
	"notifying":    {openAlarmsSQL, []any{10}, "jobs_alarm"},
	"alarms of":    {alarmsOfSQL, []any{"s", 10}, "alarms_schedule"},
	"last success": {lastSuccessSQL, []any{"s"}, "jobs_schedule_at"},
}

// EndedQueries are the reads of jobs_finished, for the plan test, with
// arguments: purge's batch and the charts'.
var EndedQueries = map[string]struct {
	SQL  string
	Args []any
}{
	"purge":       {purgeDoneSQL, []any{t2, 10}},
	"activity":    {activityAllSQL, []any{t1, int64(60000), t1, t2}},
	"chart marks": {chartMarksSQL, []any{t1, int64(3600000), t2}},
}

var t1, t2 = time.Unix(0, 0).UTC(), time.Unix(3600, 0).UTC()

// ClaimQueries are the claims and the next wake, with and without
// versions, for the plan test, with arguments; ClaimPlanSQL is what a transaction
// sets before it claims.
var ClaimQueries = map[string]struct {
	SQL  string
	Args []any
}{
	"claim":              {claimSQL, []any{"o", t2, t1, 8, []string{"t"}}},
	"claim versions":     {claimVersionsSQL, []any{"o", t2, t1, 8, []string{"t"}, []string{"t"}, []int32{2}}},
	"next wake":          {nextWakeSQL, []any{"o", []string{"t"}}},
	"next wake versions": {nextWakeVersionsSQL, []any{"o", []string{"t"}, []string{"t"}, []int32{2}}},
}

const ClaimPlanSQL = claimPlanSQL

// Channel is the store's NOTIFY channel, for tests.
func (s *Store) Channel() string { return s.channel }

// CountJobs counts every job by state and type, row by row: the truth that
// job_counts must agree with (see storetest.JobCounter).
func (s *Store) CountJobs(ctx context.Context) (map[store.State]map[string]int, error) {
	rows, err := s.pool.Query(ctx, countEveryJobSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[store.State]map[string]int{}
	for rows.Next() {
		var st store.State
		var typ string
		var n int
		if err := rows.Scan(&st, &typ, &n); err != nil {
			return nil, err
		}
		if out[st] == nil {
			out[st] = map[string]int{}
		}
		out[st][typ] = n
	}
	return out, rows.Err()
}

// CreateAtVersion creates, in the schema of dsn's search_path, the tables of
// the first v migrations and nothing else: an older schema, for tests of
// what the later migrations do to it.
func CreateAtVersion(ctx context.Context, dsn string, v int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (
	version    integer     PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return err
	}
	for _, m := range ms {
		if m.version > v {
			break
		}
		if _, err := conn.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return err
		}
	}
	return nil
}

// OpenWith is Open with edit applied to the configuration of each of the
// store's connections.
func OpenWith(ctx context.Context, dsn string, cfg Config, edit func(*pgx.ConnConfig)) (*Store, error) {
	cfg.editConn = edit
	return Open(ctx, dsn, cfg)
}

// MeasureClock measures the server's clock now, as the store does every
// clockEvery.
func (s *Store) MeasureClock(ctx context.Context) error { return s.clock.measure(ctx, s.pool) }

// Outbox writes note to a table of the test's own and enqueues jobs with
// EnqueueTx, in one transaction that commits if commit is set (see
// storetest.Outboxer).
func (s *Store) Outbox(ctx context.Context, note string, jobs []store.NewJob, commit bool) ([]store.Enqueued, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS notes (id bigserial PRIMARY KEY, note text)`); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO notes (note) VALUES ($1)`, note); err != nil {
		return nil, err
	}
	res, err := EnqueueTx(ctx, tx, jobs...)
	if err != nil || !commit {
		return res, err
	}
	return res, tx.Commit(ctx)
}

// Notes reads the notes Outbox committed.
func (s *Store) Notes(ctx context.Context) ([]string, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('notes') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT note FROM notes ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// LiveRows counts the rows of live output, hidden ones too (see
// storetest.LiveCounter).
func (s *Store) LiveRows(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM live_output`).Scan(&n)
	return n, err
}

// BackendPIDs returns the server pids of the connections s's pool holds.
func BackendPIDs(ctx context.Context, s *Store) []int {
	conns := s.pool.AcquireAllIdle(ctx)
	pids := make([]int, len(conns))
	for i, c := range conns {
		pids[i] = int(c.Conn().PgConn().PID())
		c.Release()
	}
	return pids
}
