package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// writePayload sets the payload of the job of key in db, and makes it dead,
// straight in the database: what no enqueue would write.
func writePayload(t *testing.T, db, key, payload string) {
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

// TestListingsShowUnreadablePayloads: a stored payload that no enqueue
// would take (nested 10,000 deep, or not JSON) shows as a marker with an
// error note in -dead, -jobs and -job, text and JSON, on both engines; the
// other rows are listed as they are.
func TestListingsShowUnreadablePayloads(t *testing.T) {
	t.Parallel()
	dbs := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "q.db") },
		"postgres": func(t *testing.T) string { return pgtest.DSN(t) },
	}
	for name, dbOf := range dbs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := dbOf(t)
			dir := t.TempDir()
			config := filepath.Join(dir, "schedules.toml")
			writeFile(t, config, "[tasks.t]\ncommand = [\"true\"]\n")
			ctx := context.Background()
			q, err := engine.Open(ctx, db, engine.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"good-1", "deep", "text", "good-2"} {
				if _, err := q.Enqueue(ctx, queue.NewJob{Type: "t", Key: key, Payload: json.RawMessage(`{"n":"` + key + `"}`)}); err != nil {
					t.Fatal(err)
				}
			}
			q.Close()
			for _, key := range []string{"good-1", "good-2"} {
				writePayload(t, db, key, `{"n":"`+key+`"}`)
			}
			writePayload(t, db, "deep", `{"a":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`}`)
			writePayload(t, db, "text", `{not json`)

			run := func(args ...string) string {
				t.Helper()
				var out, errb bytes.Buffer
				args = append([]string{"-config", config, "-db", db}, args...)
				if err := Run(ctx, args, &out, &errb, nil, Options{}); err != nil {
					t.Fatalf("scheduler %v: %v\nstdout: %s\nstderr: %s", args[4:], err, out.String(), errb.String())
				}
				return out.String()
			}
			for _, args := range [][]string{{"-dead", "-json"}, {"-jobs", "-json"}} {
				var views []jobView
				if err := json.Unmarshal([]byte(run(args...)), &views); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				got := map[string]jobView{}
				for _, v := range views {
					got[v.Key] = v
				}
				if len(views) != 4 {
					t.Errorf("%v listed %d jobs, want 4", args, len(views))
				}
				for _, key := range []string{"good-1", "good-2"} {
					var b bytes.Buffer
					v := got[key]
					json.Compact(&b, v.Payload)
					if b.String() != `{"n":"`+key+`"}` || v.PayloadError != "" {
						t.Errorf("%v: job %s shows payload %s, error %q", args, key, v.Payload, v.PayloadError)
					}
				}
				for key, want := range map[string]string{"deep": "payload nested too deep", "text": "payload is not valid JSON"} {
					if v := got[key]; !strings.HasPrefix(string(v.Payload), `"[unreadable payload, `) || !strings.Contains(v.PayloadError, want) {
						t.Errorf("%v: job %s shows payload %.60s, error %q; want the marker and %q", args, key, v.Payload, v.PayloadError, want)
					}
				}
			}
			var v jobView
			if err := json.Unmarshal([]byte(run("-job", "deep", "-json")), &v); err != nil || !strings.Contains(v.PayloadError, "payload nested too deep") {
				t.Errorf("-job deep -json = %+v, %v", v, err)
			}
			if out := run("-job", "deep"); !strings.Contains(out, "[unreadable payload, 20006 bytes]") || !strings.Contains(out, "payload error") {
				t.Errorf("-job deep shows no marker and note:\n%.500s", out)
			}
			if out := run("-dead"); strings.Count(out, "\n") != 5 {
				t.Errorf("-dead does not list the 4 jobs:\n%.500s", out)
			}
		})
	}
}
