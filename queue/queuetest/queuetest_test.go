package queuetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// failed is what a fakeTB's Fatalf panics with, to stop the helper.
type failed struct{ msg string }

// fakeTB records the failure of a helper under test.
type fakeTB struct{ t *testing.T }

func (f fakeTB) Helper() {}
func (f fakeTB) Fatalf(format string, args ...any) {
	panic(failed{fmt.Sprintf(format, args...)})
}

// failure runs fn with a fakeTB and returns its failure message, "" when
// it passed.
func failure(t *testing.T, fn func(tb TB)) (msg string) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(failed)
			if !ok {
				panic(v)
			}
			msg = f.msg
		}
	}()
	fn(fakeTB{t})
	return ""
}

type receipt struct {
	Order int    `json:"order"`
	Email string `json:"email"`
	Lines []int  `json:"lines,omitempty"`
}

func (receipt) Kind() string { return "receipt" }

var engines = []string{"sqlite", "postgres"}

// openEngine opens a queue on engine with a fake clock; PostgreSQL is
// skipped without SCHEDULER_TEST_POSTGRES. dsn is its URL, "" for SQLite;
// sqliteStore the SQLite engine, nil for PostgreSQL.
func openEngine(t *testing.T, engine string) (q *queue.Client, dsn string, sqliteStore *sqlite.Store) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(Start)
	if engine == "postgres" {
		dsn = pgtest.DSN(t)
		s, err := postgres.Open(ctx, dsn, postgres.Config{Clock: clk, LocalClock: true})
		if err != nil {
			t.Fatal(err)
		}
		q, err = queue.New(s, queue.Config{})
		if err != nil {
			t.Fatal(err)
		}
	} else {
		s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "q.db"), sqlite.Config{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		sqliteStore = s
		if q, err = queue.New(s, queue.Config{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { q.Close() })
	return q, dsn, sqliteStore
}

func TestRequireEnqueued(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testRequireEnqueued(t, engine)
		})
	}
}

func testRequireEnqueued(t *testing.T, engine string) {
	q, _, _ := openEngine(t, engine)
	ctx := context.Background()
	for _, r := range []receipt{{Order: 41, Email: "a@example.com"}, {Order: 42, Email: "b@example.com", Lines: []int{1, 2}}} {
		if _, err := q.EnqueueArgs(ctx, r, queue.NewJob{Key: fmt.Sprintf("receipt|%d", r.Order)}); err != nil {
			t.Fatal(err)
		}
	}
	j := RequireEnqueued(t, q, Want{Type: "receipt", Payload: map[string]any{"order": 42}})
	if j.Key != "receipt|42" {
		t.Errorf("RequireEnqueued by payload = %s, want receipt|42", j.Key)
	}
	if j := RequireEnqueued(t, q, Want{Type: "receipt"}); j.Key != "receipt|42" {
		t.Errorf("RequireEnqueued by type = %s, want the newest, receipt|42", j.Key)
	}
	RequireEnqueued(t, q, Want{Key: "receipt|41", State: queue.StatePending, Payload: receipt{Order: 41, Email: "a@example.com"}})
	RequireEnqueued(t, q, Want{Payload: []byte(`{"lines":[1,2]}`)})
	if n := len(Jobs(t, q, Want{Type: "receipt"})); n != 2 {
		t.Errorf("Jobs of type receipt = %d, want 2", n)
	}
	RequireNotEnqueued(t, q, Want{Type: "receipt", Payload: map[string]any{"order": 43}})

	for _, c := range []struct {
		name string
		fn   func(tb TB)
		want []string
	}{
		{"payload differs", func(tb TB) { RequireEnqueued(tb, q, Want{Type: "receipt", Payload: map[string]any{"order": 43}}) },
			[]string{`no job enqueued matching type "receipt", payload {"order":43}; jobs of type "receipt" enqueued, newest first:`,
				`key "receipt|42" state pending payload {"order":42,"email":"b@example.com","lines":[1,2]}`, `key "receipt|41"`}},
		{"array is compared whole", func(tb TB) { RequireEnqueued(tb, q, Want{Payload: map[string]any{"lines": []int{1}}}) },
			[]string{`no job enqueued matching payload {"lines":[1]}`}},
		{"no such key", func(tb TB) { RequireEnqueued(tb, q, Want{Key: "receipt|1"}) },
			[]string{`no job enqueued matching key "receipt|1"; jobs enqueued, newest first:`}},
		{"wrong state", func(tb TB) { RequireEnqueued(tb, q, Want{Key: "receipt|41", State: queue.StateDone}) },
			[]string{`no job enqueued matching key "receipt|41", state "done"`}},
		{"no such type", func(tb TB) { RequireEnqueued(tb, q, Want{Type: "invoice"}) },
			[]string{`no job enqueued matching type "invoice"; no jobs of type "invoice" enqueued`}},
		{"enqueued after all", func(tb TB) {
			RequireNotEnqueued(tb, q, Want{Type: "receipt", Payload: receipt{Order: 41, Email: "a@example.com"}})
		},
			[]string{`1 jobs enqueued matching type "receipt", payload {"order":41,"email":"a@example.com"}, want none; the newest: job 1 type "receipt"`}},
	} {
		msg := failure(t, c.fn)
		if msg == "" {
			t.Errorf("%s: passed, want a failure", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: failure\n%s\ndoes not contain\n%s", c.name, msg, w)
			}
		}
	}
}

// TestRequireEnqueuedTx: inside the program's transaction the helper sees
// what it enqueued there; after a rollback the queue holds nothing.
func TestRequireEnqueuedTx(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			q, dsn, s := openEngine(t, engine)
			nj, err := queue.MarshalArgs(receipt{Order: 7}, queue.NewJob{Key: "receipt|7"})
			if err != nil {
				t.Fatal(err)
			}
			rollback := errors.New("roll back")
			var msg string
			check := func(tb TB, require func(TB, Want) *queue.Job) {
				require(t, Want{Type: "receipt", Key: "receipt|7", Payload: map[string]any{"order": 7}})
				msg = failure(t, func(tb TB) { require(tb, Want{Type: "receipt", Payload: map[string]any{"order": 8}}) })
			}
			if engine == "sqlite" {
				err = s.Tx(context.Background(), func(tx *sql.Tx) error {
					if _, err := sqlite.EnqueueTx(context.Background(), tx, nj); err != nil {
						return err
					}
					check(t, func(tb TB, w Want) *queue.Job { return RequireEnqueuedSQLiteTx(tb, tx, w) })
					return rollback
				})
			} else {
				err = inPostgresTx(t, dsn, func(tx pgx.Tx) error {
					if _, err := postgres.EnqueueTx(context.Background(), tx, nj); err != nil {
						return err
					}
					check(t, func(tb TB, w Want) *queue.Job { return RequireEnqueuedPostgresTx(tb, tx, w) })
					return rollback
				})
			}
			if !errors.Is(err, rollback) {
				t.Fatalf("transaction = %v", err)
			}
			if want := `no job enqueued in the transaction matching type "receipt", payload {"order":8}; jobs of type "receipt" enqueued, newest first:`; !strings.HasPrefix(msg, want) || !strings.Contains(msg, `key "receipt|7"`) {
				t.Errorf("failure in the transaction:\n%s\nwant\n%s ... receipt|7", msg, want)
			}
			RequireNotEnqueued(t, q, Want{Key: "receipt|7"})
		})
	}
}

// inPostgresTx runs fn in a transaction of a connection of its own to dsn,
// rolled back when fn fails.
func inPostgresTx(t *testing.T, dsn string, fn func(pgx.Tx) error) error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	return pgx.BeginFunc(ctx, conn, fn)
}

// TestWork: one attempt of a typed handler ends as a pool's would, on the
// fake clock: done with its output, retried after the policy's backoff
// without jitter, dead on its last attempt or for an undecodable payload.
func TestWork(t *testing.T) {
	t.Parallel()
	send := queue.WorkFunc[receipt](func(ctx context.Context, j *queue.TypedJob[receipt]) (string, error) {
		if j.Args.Email == "" {
			return "", fmt.Errorf("order %d: mail server refused", j.Args.Order)
		}
		return "sent to " + j.Args.Email, nil
	})
	cfg := Config{Type: queue.TypeConfig{Backoff: 30 * time.Second}}
	for _, c := range []struct {
		name string
		job  *queue.Job
		want string
	}{
		{"done", Claimed(t, receipt{Order: 1, Email: "a@example.com"}, queue.NewJob{}), "done 0s sent to a@example.com <nil>"},
		{"first retry", Claimed(t, receipt{Order: 2}, queue.NewJob{}), "retry 30s  order 2: mail server refused"},
		{"third retry", withAttempt(Claimed(t, receipt{Order: 2}, queue.NewJob{}), 3), "retry 2m0s  order 2: mail server refused"},
		{"last attempt", withAttempt(Claimed(t, receipt{Order: 2}, queue.NewJob{MaxAttempts: 3}), 3), "dead 0s  order 2: mail server refused"},
		{"undecodable", &queue.Job{Type: "receipt", Payload: []byte(`{"order":"x"}`)},
			`dead 0s  permanent: decode payload of job type "receipt" into queuetest.receipt: field "order": cannot use JSON string as int`},
	} {
		t.Run(c.name, func(t *testing.T) {
			attempt := c.job.Attempt
			r := Work(t, send, c.job, cfg)
			errText := "<nil>"
			if r.Err != nil {
				errText = r.Err.Error()
			}
			if got := fmt.Sprintf("%s %s %s %s", r.Outcome, r.RetryIn, r.Output, errText); got != c.want {
				t.Errorf("Work = %q, want %q", got, c.want)
			}
			if !r.Started.Equal(Start) || (r.Outcome == queue.OutcomeRetry && !r.RetryAt.Equal(Start.Add(r.RetryIn))) {
				t.Errorf("Work on the fake clock: started %s, retry at %s", r.Started, r.RetryAt)
			}
			if c.job.Attempt != attempt || len(c.job.Output()) != 0 {
				t.Errorf("Work changed the caller's job: %+v", c.job)
			}
		})
	}
}

func withAttempt(j *queue.Job, n int) *queue.Job {
	j.Attempt = n
	return j
}

// TestWorkTimeout: the type's Timeout ends the attempt as a pool's: a
// failed attempt, TimedOut, whose context's cause says so.
func TestWorkTimeout(t *testing.T) {
	t.Parallel()
	h := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		<-ctx.Done()
		return context.Cause(ctx)
	})
	r := Work(t, h, Claimed(t, nil, queue.NewJob{Type: "slow"}), Config{Type: queue.TypeConfig{Timeout: time.Millisecond}})
	if !r.TimedOut || r.Outcome != queue.OutcomeRetry || r.Err == nil || r.Err.Error() != "timed out after 1ms" {
		t.Errorf("Work past the timeout = %+v", r)
	}
}
