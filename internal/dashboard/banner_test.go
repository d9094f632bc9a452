package dashboard

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestBannerWhenTheFileIsNotWhatRuns: every page, errors included, has a
// banner saying what to do while the config file on disk differs from what
// the live daemons run or does not load; none while they run the file.
func TestBannerWhenTheFileIsNotWhatRuns(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	q := openQueue(t, filepath.Join(t.TempDir(), "q.db"), clk)
	path := filepath.Join(t.TempDir(), "schedules.toml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(testConfig)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	running := store.ConfigSHA256([]byte(testConfig))
	a := schedule.Agreement{Configs: 1, Ruling: running, Daemons: []schedule.DaemonConfig{{Host: "h", PID: 1, Config: running, Self: true}}}
	h, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, Clock: clk,
		AgreementFunc: func() (schedule.Agreement, bool) { return a, true }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	banner := func(path string) string {
		t.Helper()
		_, body := get(t, srv, path)
		if !strings.Contains(body, `<p id="banner" role="alert">`) {
			return ""
		}
		return between(t, body, `<p id="banner" role="alert">`, "</p>")
	}
	pages := []string{"/", "/jobs", "/alarms", "/schedules/nightly", "/runs/999"}
	for _, p := range pages {
		if b := banner(p); b != "" {
			t.Errorf("GET %s while the daemons run the file: banner %q", p, b)
		}
	}
	write(testConfig + "\n# edited\n")
	for _, p := range pages {
		b := banner(p)
		for _, want := range []string{path, "is not what the daemons run", running[:12], "scheduler -check", "reload"} {
			if !strings.Contains(b, want) {
				t.Errorf("GET %s with the file edited: banner %q lacks %q", p, b, want)
			}
		}
	}
	write(testConfig + "\n[[schedule]]\nname = \"bad\"\ncron = \"61 * * * *\"\ntask = \"report\"\n")
	for _, p := range pages {
		b := banner(p)
		for _, want := range []string{path, "does not load", "cron", "keep running the config they loaded", "scheduler -check", "reload"} {
			if !strings.Contains(b, want) {
				t.Errorf("GET %s with the file broken: banner %q lacks %q", p, b, want)
			}
		}
	}
	if status, _ := get(t, srv, "/runs/999"); status != http.StatusNotFound {
		t.Errorf("GET /runs/999 = %d, want 404", status)
	}
}
