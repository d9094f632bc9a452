package dashboard

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// writeDeadPayload sets the payload of job key in db, and makes it dead,
// straight in the database: what no enqueue would write.
func writeDeadPayload(t *testing.T, db, key, payload string) {
	t.Helper()
	ctx := context.Background()
	const update = `UPDATE jobs SET payload = $1, state = 'dead', attempt = 1, finished_at = run_at WHERE key = $2`
	if engine.IsPostgres(db) {
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, update, payload, key); err != nil {
			t.Fatal(err)
		}
		return
	}
	conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, update, payload, key); err != nil {
		t.Fatal(err)
	}
}

// TestUnreadablePayloadShownAsMarker: a stored payload nested 10,000 deep
// or not JSON shows on its run page as a marker with why, and the list of
// dead jobs shows every row, on both engines.
func TestUnreadablePayloadShownAsMarker(t *testing.T) {
	dbs := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "q.db") },
		"postgres": func(t *testing.T) string { return pgtest.DSN(t) },
	}
	for name, dbOf := range dbs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := dbOf(t)
			clk := clock.NewFake(now)
			q := openQueue(t, db, clk)
			ids := map[string]int64{}
			for _, key := range []string{"good", "deep", "text"} {
				e, err := q.Enqueue(context.Background(), queue.NewJob{Type: "t", Key: key, RunAt: now, Payload: json.RawMessage(`{"n":"` + key + `"}`)})
				if err != nil {
					t.Fatal(err)
				}
				ids[key] = e.ID
				writeDeadPayload(t, db, key, `{"n":"`+key+`"}`)
			}
			writeDeadPayload(t, db, "deep", `{"a":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`}`)
			writeDeadPayload(t, db, "text", `{not json`)
			srv := newServer(t, q, parseConfig(t), clk)

			for key, want := range map[string]string{"deep": "payload nested too deep", "text": "payload is not valid JSON"} {
				page := html.UnescapeString(mustGet(t, srv, fmt.Sprintf("/runs/%d", ids[key])))
				if !strings.Contains(page, "[unreadable payload, ") || !strings.Contains(page, want) {
					t.Errorf("run page of %s lacks the marker and %q", key, want)
				}
			}
			if page := html.UnescapeString(mustGet(t, srv, fmt.Sprintf("/runs/%d", ids["good"]))); !strings.Contains(page, `{"n":"good"}`) {
				t.Errorf("run page of the good job lacks its payload")
			}
			dead := mustGet(t, srv, "/jobs?state=dead")
			for key, id := range ids {
				if !strings.Contains(dead, fmt.Sprintf("/runs/%d", id)) {
					t.Errorf("/jobs?state=dead does not list job %s", key)
				}
			}
		})
	}
}
