package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// metricsConfig has a task that succeeds, one that fails for good on its
// second attempt, and schedules that will not come due during the test;
// "broken" is watched, and its alarms go to a task that fails.
const metricsConfig = `
[http]
listen = "127.0.0.1:0"

[tasks.ok]
command = ["true"]

[tasks.fail]
command = ["false"]
max_attempts = 2
backoff = "1ms"
max_backoff = "1ms"

[[schedule]]
name = "yearly"
cron = "0 0 1 1 *"
task = "ok"

[tasks.page]
command = ["false"]
max_attempts = 1

[[schedule]]
name = "broken"
cron = "0 0 1 1 *"
task = "fail"
deadline = "1h"
notify = ["page"]
`

// listenRE finds the address the daemon logs once it listens.
var listenRE = regexp.MustCompile(`msg="http listening" listen=(\S+)`)

// scrape fetches url and returns its body; it fails the test unless the
// answer is 200.
func scrape(t testing.TB, url string) string {
	t.Helper()
	body, code := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	return body
}

func get(t testing.TB, url string) (string, int) {
	t.Helper()
	c := &http.Client{Timeout: deadline}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b), resp.StatusCode
}

// samples parses the Prometheus text format into values by series, the
// series written as it is on the line: name{label="value",...}.
func samples(t testing.TB, body string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("bad sample line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsScrape runs a known sequence of jobs through a daemon and
// checks its /metrics against the database, as -status reads it, and with
// promtool when it is installed; then /healthz.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	dir := setup(t, metricsConfig)
	d := startDaemon(t, dir, nil)
	m := listenRE.FindStringSubmatch(d.waitLog("http listening"))
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", d.log())
	}
	base := "http://" + m[1]

	before := samples(t, scrape(t, base+"/metrics"))
	for series, want := range map[string]float64{
		`scheduler_jobs_finished_total{outcome="succeeded",task="ok"}`:         0,
		`scheduler_jobs_finished_total{outcome="timed_out",task="fail"}`:       0,
		`scheduler_runs_skipped_total{reason="misfire",schedule="yearly"}`:     0,
		`scheduler_alarms_raised_total{reason="missed",schedule="broken"}`:     0,
		`scheduler_jobs{state="done",task="ok"}`:                               0,
		`scheduler_schedule_last_success_timestamp_seconds{schedule="yearly"}`: 0,
		`scheduler_schedule_paused{schedule="yearly"}`:                         0,
		`scheduler_database_up`: 1,
	} {
		if got, ok := before[series]; !ok || got != want {
			t.Errorf("before any run: %s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	// The Go runtime's and the process's own metrics, as any daemon has.
	for _, series := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if got, ok := before[series]; !ok || got <= 0 {
			t.Errorf("%s = %v (present %v), want a positive value", series, got, ok)
		}
	}

	mustCLI(t, dir, "-trigger", "yearly")
	mustCLI(t, dir, "-trigger", "yearly", "-key", "second")
	mustCLI(t, dir, "-trigger", "broken")
	d.waitLogCount("job dead", 2) // broken's job, then its dead alarm's notification
	d.waitLogCount("job done", 2)
	mustCLI(t, dir, "-pause", "broken")

	after := samples(t, scrape(t, base+"/metrics"))
	want := map[string]float64{
		`scheduler_jobs_finished_total{outcome="succeeded",task="ok"}`:   2,
		`scheduler_jobs_finished_total{outcome="retried",task="fail"}`:   1,
		`scheduler_jobs_finished_total{outcome="dead",task="fail"}`:      1,
		`scheduler_jobs_finished_total{outcome="succeeded",task="fail"}`: 0,
		`scheduler_job_duration_seconds_count{task="ok"}`:                2,
		`scheduler_job_start_delay_seconds_count{task="fail"}`:           2,
		`scheduler_schedule_paused{schedule="broken"}`:                   1,
		`scheduler_schedule_paused{schedule="yearly"}`:                   0,
		`scheduler_workers_busy{pool="default"}`:                         0,
		`scheduler_alarms_raised_total{reason="dead",schedule="broken"}`: 1,
		`scheduler_alarms_raised_total{reason="dead",schedule="yearly"}`: 0,
		`scheduler_notifications_failed_total{task="page"}`:              1,
		`scheduler_incidents_open{kind="dead",schedule="broken"}`:        1,
		`scheduler_incidents_open{kind="late",schedule="broken"}`:        0,
		`scheduler_schedule_silenced{schedule="broken"}`:                 0,
		`scheduler_database_up`:                                          1,
	}
	var st statusReport
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &st); err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"ok", "fail"} {
		for _, state := range []string{"pending", "running", "done", "dead", "cancelled"} {
			want[fmt.Sprintf(`scheduler_jobs{state=%q,task=%q}`, state, task)] = float64(st.Counts[state][task])
		}
	}
	if st.Counts["done"]["ok"] != 2 || st.Counts["dead"]["fail"] != 1 {
		t.Errorf("-status counts = %v, want 2 done ok and 1 dead fail", st.Counts)
	}
	for series, w := range want {
		if got, ok := after[series]; !ok || got != w {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, w)
		}
	}
	// The timestamps, against the jobs' rows.
	jobs := listJobs(t, dir, "-schedule", "yearly")
	var newest time.Time
	for _, j := range jobs {
		if f := parseTime(t, j.FinishedAt); f.After(newest) {
			newest = f
		}
	}
	// -jobs prints whole seconds.
	if got, w := after[`scheduler_schedule_last_success_timestamp_seconds{schedule="yearly"}`], float64(newest.Unix()); math.Floor(got) != w {
		t.Errorf("yearly's last success = %v, want %v (the newest finished_at)", got, w)
	}
	dead := listJobs(t, dir, "-schedule", "broken")
	if len(dead) != 1 {
		t.Fatalf("broken has %d jobs, want 1", len(dead))
	}
	if got, w := after[`scheduler_schedule_last_completion_timestamp_seconds{schedule="broken"}`], float64(parseTime(t, dead[0].FinishedAt).Unix()); math.Floor(got) != w {
		t.Errorf("broken's last completion = %v, want %v", got, w)
	}
	if got := after[`scheduler_schedule_last_success_timestamp_seconds{schedule="broken"}`]; got != 0 {
		t.Errorf("broken's last success = %v, want 0: it never succeeded", got)
	}
	next := time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := after[`scheduler_schedule_next_run_timestamp_seconds{schedule="yearly"}`]; got != float64(next.Unix()) {
		t.Errorf("yearly's next run = %v, want %v", got, next.Unix())
	}
	if got, w := after[`scheduler_schedule_deadline_timestamp_seconds{schedule="broken"}`], float64(next.Add(time.Hour).Unix()); got != w {
		t.Errorf("broken's deadline = %v, want %v: its next instant's", got, w)
	}
	if _, ok := after[`scheduler_schedule_deadline_timestamp_seconds{schedule="yearly"}`]; ok {
		t.Errorf("a schedule without a deadline has a deadline")
	}
	if _, ok := after[`scheduler_schedule_next_run_timestamp_seconds{schedule="broken"}`]; ok {
		t.Errorf("a paused schedule has a next run")
	}

	promtoolCheck(t, scrape(t, base+"/metrics"))

	if body, code := get(t, base+"/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}

	// A reload keeps the listener and gives a new schedule its series.
	writeFile(t, filepath.Join(dir, "schedules.toml"), metricsConfig+`
[[schedule]]
name = "added"
cron = "0 0 1 1 *"
task = "ok"
`)
	d.signal(syscall.SIGHUP)
	d.waitLog("config reloaded")
	reloaded := samples(t, scrape(t, base+"/metrics"))
	for _, series := range []string{
		`scheduler_runs_materialised_total{schedule="added"}`,
		`scheduler_schedule_last_success_timestamp_seconds{schedule="added"}`,
	} {
		if got, ok := reloaded[series]; !ok || got != 0 {
			t.Errorf("after the reload: %s = %v (present %v), want 0", series, got, ok)
		}
	}
	if got := reloaded[`scheduler_jobs_finished_total{outcome="succeeded",task="ok"}`]; got != 2 {
		t.Errorf("after the reload the counters restarted: succeeded = %v, want 2", got)
	}
	d.signal(os.Interrupt)
	if err := d.wait(); err != nil {
		t.Fatalf("daemon: %v\n%s", err, d.log())
	}
}

func listJobs(t testing.TB, dir string, args ...string) []jobView {
	t.Helper()
	var out []jobView
	if err := json.Unmarshal([]byte(mustCLI(t, dir, append([]string{"-jobs", "-json"}, args...)...)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func parseTime(t testing.TB, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return at
}

// promtool returns promtool's path, or skips t when it is not installed,
// unless SCHEDULER_REQUIRE_PROMTOOL=1 makes that a failure.
func promtool(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("SCHEDULER_REQUIRE_PROMTOOL") == "1" {
			t.Fatalf("promtool not found and SCHEDULER_REQUIRE_PROMTOOL=1: %v", err)
		}
		t.Skip("promtool not found: install prometheus (apt-get install prometheus) to check the metrics and rules with it")
	}
	return path
}

// promtoolCheck runs promtool check metrics on a scrape: it must find
// nothing to say.
func promtoolCheck(t *testing.T, body string) {
	t.Helper()
	t.Run("promtool", func(t *testing.T) {
		cmd := exec.Command(promtool(t), "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		out, err := cmd.CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("promtool check metrics: %v\n%s\nscrape:\n%s", err, out, body)
		}
	})
}

// TestRules runs the shipped alert rules' unit tests with promtool.
func TestRules(t *testing.T) {
	t.Parallel()
	rules := filepath.Join("..", "..", "deploy", "prometheus")
	cmd := exec.Command(promtool(t), "test", "rules", "scheduler.rules.test.yml")
	cmd.Dir = rules
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
	cmd = exec.Command(promtool(t), "check", "rules", "scheduler.rules.yml")
	cmd.Dir = rules
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}
