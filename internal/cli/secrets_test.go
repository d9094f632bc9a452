package cli

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sekrit is in every secret of TestSecretsStoredNowhere: each form a
// secret can take (JSON-escaped, Go-quoted, percent-encoded) keeps it.
const sekrit = "SEKRIT"

// TestSecretsStoredNowhere runs the built binary: a command task that
// echoes its payload, whose redacted token holds a quote, <, &, >, a tab
// and a non-ASCII letter, and fails; and an HTTP task whose URL holds an
// API key in its query and a token in its path (masked by redact_output),
// against a server that fails and quotes the request. The secrets are in
// no column of the jobs, attempts and alarms tables (but the payload of
// the job that needs its token), in no notification, in no line of the
// daemon's log, and in no output of -job, -jobs, -dead and -alarms, text
// or JSON.
func TestSecretsStoredNowhere(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "key %s refused for %s (body %s)", r.URL.Query().Get("apikey"), r.URL.RequestURI(), body)
	}))
	t.Cleanup(srv.Close)
	dir := setup(t, `
[tasks.pay]
command = ["sh", "-c", "cat; echo; exit 3"]
max_attempts = 1
redact = ["token"]
[tasks.hook]
url = "`+srv.URL+`/hooks/PATH`+sekrit+`1/report?apikey=k%2B`+sekrit+`&customer=acme"
max_attempts = 1
redact_output = ["PATH`+sekrit+`[0-9]"]
[tasks.note]
command = ["sh", "-c", "cat > note-$SCHEDULER_JOB_ID.json"]
[[schedule]]
name = "pay"
cron = "0 0 1 1 *"
task = "pay"
notify = ["note"]
payload = { token = "tok\"<&>\t`+sekrit+`-é", who = "Ann" }
[[schedule]]
name = "hook"
cron = "0 0 1 1 *"
task = "hook"
notify = ["note"]
`)
	d := startDaemon(t, dir, nil)
	ids := map[string]string{}
	for _, s := range []string{"pay", "hook"} {
		out := mustCLI(t, dir, "-trigger", s)
		id := regexp.MustCompile(`enqueued job (\d+)`).FindStringSubmatch(out)
		if id == nil {
			t.Fatalf("trigger %s: %q", s, out)
		}
		ids[s] = id[1]
	}
	for s, id := range ids {
		eventually(t, "job "+s+" dead", func() bool {
			out, _, _ := cli(t, dir, "-job", id, "-json")
			var v jobView
			json.Unmarshal([]byte(out), &v)
			return v.State == "dead"
		})
	}
	eventually(t, "two notifications", func() bool {
		notes, _ := filepath.Glob(filepath.Join(dir, "note-*.json"))
		done := 0
		for _, n := range notes {
			if b, err := os.ReadFile(n); err == nil && len(b) > 0 {
				done++
			}
		}
		return done == 2
	})
	d.waitLogCount("job dead", 2)

	shown := map[string]string{}
	for _, args := range [][]string{
		{"-job", ids["pay"]}, {"-job", ids["pay"], "-json"}, {"-job", ids["hook"]}, {"-job", ids["hook"], "-json"},
		{"-jobs"}, {"-jobs", "-json"}, {"-dead"}, {"-dead", "-json"}, {"-alarms"}, {"-alarms", "-json"},
	} {
		shown[strings.Join(args, " ")] = mustCLI(t, dir, args...)
	}
	notes, _ := filepath.Glob(filepath.Join(dir, "note-*.json"))
	for _, n := range notes {
		b, _ := os.ReadFile(n)
		shown["notification "+filepath.Base(n)] = string(b)
	}
	shown["the daemon's log"] = d.log()
	for what, out := range shown {
		if strings.Contains(out, sekrit) {
			t.Errorf("%s shows a secret:\n%s", what, out)
		}
	}
	for what, want := range map[string]string{
		"-job " + ids["pay"]:  `\"token\":\"[redacted]\"`,
		"-job " + ids["hook"]: "/hooks/[redacted]/report?apikey=[redacted]&customer=[redacted]",
	} {
		if !strings.Contains(shown[what], want) {
			t.Errorf("%s lacks %q:\n%s", what, want, shown[what])
		}
	}

	// Every text of every row, but the payload the command needs.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "scheduler.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"jobs", "attempts", "alarms"} {
		rows, err := db.QueryContext(t.Context(), "SELECT * FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		n := 0
		for rows.Next() {
			n++
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := map[string]string{}
			for i, c := range cols {
				switch v := vals[i].(type) {
				case string:
					row[c] = v
				case []byte:
					row[c] = string(v)
				}
			}
			for c, v := range row {
				if table == "jobs" && c == "payload" && row["type"] == "pay" {
					if !strings.Contains(v, sekrit) {
						t.Errorf("the pay job's payload %s: want the real token, to run it", v)
					}
					continue
				}
				if strings.Contains(v, sekrit) {
					t.Errorf("%s.%s holds a secret: %q", table, c, v)
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if n == 0 {
			t.Errorf("table %s is empty", table)
		}
	}
}
