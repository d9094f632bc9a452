package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/internal/engine"
)

// The secrets of TestRedactedSecrets: two payload fields and a bearer token
// the command prints.
const (
	secretToken  = "tok-SECRET-1"
	secretCard   = "4111111111111111"
	secretBearer = "zz9.top-secret"
)

// TestRedactedSecrets runs the built binary: a command task with redact and
// redact_output gets the real payload on its standard input and in its
// arguments, prints its secrets and dies; -job, -dead and -jobs, as text
// and JSON, the daemon's log, the alarm's notification, and the attempt
// history and last error stored in the database show "[redacted]" instead.
func TestRedactedSecrets(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.pay]
command = ["sh", "-c", "cat > stdin.json; echo \"$0\" > argv.txt; echo card $0; echo 'Authorization: Bearer `+secretBearer+`'; exit 3", "{{.token}}"]
max_attempts = 1
redact = ["token", "card.number"]
redact_output = ["(?i)bearer [a-z0-9._-]+"]
[tasks.note]
command = ["sh", "-c", "cat > note.json"]
[[schedule]]
name = "s"
cron = "0 0 1 1 *"
task = "pay"
notify = ["note"]
payload = { token = "`+secretToken+`", card = { number = "`+secretCard+`", holder = "Ann" } }
`)
	secrets := []string{secretToken, secretCard, secretBearer}
	if check := mustCLI(t, dir, "-check"); !regexp.MustCompile(`pay +token, card.number +"\(\?i\)bearer \[a-z0-9._-\]\+"`).MatchString(check) {
		t.Errorf("-check lacks the redaction of task pay:\n%s", check)
	}
	d := startDaemon(t, dir, nil)
	out := mustCLI(t, dir, "-trigger", "s")
	id := regexp.MustCompile(`enqueued job (\d+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("trigger: %q", out)
	}
	eventually(t, "job dead", func() bool {
		out, _, _ := cli(t, dir, "-job", id[1], "-json")
		var v jobView
		json.Unmarshal([]byte(out), &v)
		return v.State == "dead"
	})

	// The command got the real values.
	stdin, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	argv, err := os.ReadFile(filepath.Join(dir, "argv.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stdin), secretToken) || !strings.Contains(string(stdin), secretCard) || strings.TrimSpace(string(argv)) != secretToken {
		t.Errorf("the command got stdin %s and argument %q; want the real payload", stdin, argv)
	}

	shown := map[string]string{}
	for _, args := range [][]string{
		{"-job", id[1]}, {"-job", id[1], "-json"}, {"-dead"}, {"-dead", "-json"}, {"-jobs", "-json"}, {"-jobs"},
	} {
		shown[strings.Join(args, " ")] = mustCLI(t, dir, args...)
	}
	for what, out := range shown {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %q:\n%s", what, s, out)
			}
		}
	}
	job := shown["-job "+id[1]]
	for _, want := range []string{`"number":"[redacted]"`, `"holder":"Ann"`, `"token":"[redacted]"`, "card [redacted]", "Authorization: [redacted]"} {
		if !strings.Contains(job, want) {
			t.Errorf("-job lacks %q:\n%s", want, job)
		}
	}
	var v jobView
	if err := json.Unmarshal([]byte(shown["-job "+id[1]+" -json"]), &v); err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal(v.Payload, &payload); err != nil || payload["token"] != "[redacted]" {
		t.Errorf("-job -json payload %s: want the token redacted", v.Payload)
	}

	// Masked before it was stored: the database holds no secret of the
	// output or error.
	q, err := engine.Open(t.Context(), filepath.Join(dir, "scheduler.db"), engine.Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	stored, err := q.Dead(t.Context(), 10)
	if err != nil || len(stored) != 1 {
		t.Fatalf("dead jobs %v, %v", stored, err)
	}
	as, err := q.Attempts(t.Context(), stored[0].ID)
	if err != nil || len(as) != 1 {
		t.Fatalf("attempts %v, %v", as, err)
	}
	if !strings.Contains(string(stored[0].Payload), secretToken) {
		t.Errorf("stored payload %s: want the real one, to run it", stored[0].Payload)
	}
	for _, s := range secrets {
		if strings.Contains(as[0].Output, s) || strings.Contains(as[0].Error, s) || strings.Contains(stored[0].LastError, s) {
			t.Errorf("stored attempt output %q, error %q, last error %q: the secret %q is in the database", as[0].Output, as[0].Error, stored[0].LastError, s)
		}
	}
	if !strings.Contains(as[0].Output, "Authorization: [redacted]") {
		t.Errorf("stored output %q: want the bearer token masked", as[0].Output)
	}

	// The alarm's notification and the daemon's log.
	notePath := filepath.Join(dir, "note.json")
	eventually(t, "notification", func() bool {
		b, err := os.ReadFile(notePath)
		return err == nil && len(b) > 0
	})
	note, _ := os.ReadFile(notePath)
	d.waitLog("job dead")
	for _, s := range secrets {
		if strings.Contains(string(note), s) {
			t.Errorf("the alarm's notification shows the secret %q: %s", s, note)
		}
		if strings.Contains(d.log(), s) {
			t.Errorf("the daemon's log shows the secret %q:\n%s", s, d.log())
		}
	}
}
