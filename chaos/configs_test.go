package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// configsFile is a config whose schedule "fan", due every second, fans out
// to items items; with onlyA it also has the schedule "only_a".
func configsFile(items int, onlyA bool) string {
	var sb strings.Builder
	sb.WriteString("[tasks.t]\ncommand = [\"true\"]\n\n[[schedule]]\nname = \"fan\"\ncron = \"* * * * * *\"\ntask = \"t\"\nfor_each = [\n")
	for i := range items {
		fmt.Fprintf(&sb, "  { n = \"%d\" },\n", i+1)
	}
	sb.WriteString("]\n")
	if onlyA {
		sb.WriteString("\n[[schedule]]\nname = \"only_a\"\ncron = \"* * * * * *\"\ntask = \"t\"\n")
	}
	return sb.String()
}

// httpDaemon is a daemon of the configs test with the base URL of its
// listener.
type httpDaemon struct {
	*daemon
	url string
}

// spawnHTTP starts a daemon for s with config as its file and a listener on
// a free port of the loopback, and waits until it started.
func spawnHTTP(t *testing.T, s *site, config string) httpDaemon {
	t.Helper()
	d := s.spawn("-config", config, "-http", "127.0.0.1:0")
	d.waitMsg("scheduler started", 1)
	d.waitMsg("http listening", 1)
	addr, _ := d.entries("http listening")[0]["listen"].(string)
	if addr == "" {
		t.Fatalf("%s logged no listen address:\n%s", d.name, d.log())
	}
	return httpDaemon{d, "http://" + addr}
}

// get returns the status and body of a GET of path.
func (d httpDaemon) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(d.url + path)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", d.name, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", d.name, path, err)
	}
	return resp.StatusCode, string(b)
}

// metric returns the value of the unlabelled gauge name in a scrape.
func (d httpDaemon) metric(t *testing.T, name string) string {
	t.Helper()
	_, body := d.get(t, "/metrics")
	for l := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+" "); ok {
			return v
		}
	}
	return ""
}

// TestConfigsDiffer runs two daemons on one SQLite file, with different
// files: "fan" fanned out to 5 items in A's, to 3 in B's, and "only_a" in
// A's alone. B's, loaded last, rules: every instant made from then on has
// B's 3 items, none is made of only_a, and A's beat sits out. Both daemons
// warn once in their logs, -status, /healthz (still 200) and the metrics
// say it, and no instant is ever made with part of a config's items. Once
// A reloads B's file, they agree and say so.
func TestConfigsDiffer(t *testing.T) {
	t.Parallel()
	s := newSite(t, configsFile(5, true))
	testConfigsDiffer(t, s, func() []jobRow { return loadJobs(t, openDB(t, s.db, false)) })
}

// TestPostgresConfigsDiffer is TestConfigsDiffer on PostgreSQL.
func TestPostgresConfigsDiffer(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	s := newSite(t, configsFile(5, true))
	s.db = dsn
	db := openPG(t, dsn)
	testConfigsDiffer(t, s, func() []jobRow { return loadPostgres(t, db).jobs })
}

func testConfigsDiffer(t *testing.T, s *site, jobs func() []jobRow) {
	bFile := s.path("b.toml")
	if err := os.WriteFile(bFile, []byte(configsFile(3, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	itemsA, itemsB := []string{"n=1", "n=2", "n=3", "n=4", "n=5"}, []string{"n=1", "n=2", "n=3"}
	// instants returns the items of each instant of schedule, sorted.
	instants := func(schedule string) map[int64][]string {
		m := map[int64][]string{}
		for _, j := range jobs() {
			if j.Schedule == schedule && !j.manual() {
				m[j.ScheduledAt] = append(m[j.ScheduledAt], j.Item)
			}
		}
		for at := range m {
			slices.Sort(m[at])
		}
		return m
	}

	a := spawnHTTP(t, s, s.config)
	eventually(t, "A's instants of fan", func() bool { return len(instants("fan")) >= 2 })
	b := spawnHTTP(t, s, bFile)
	bStarted := time.Now()
	for _, d := range []httpDaemon{a, b} {
		d.waitMsg("daemons run different configs", 1)
	}
	eventually(t, "B's instants of fan", func() bool {
		n := 0
		for at := range instants("fan") {
			if time.UnixMilli(at).After(bStarted.Add(2 * time.Second)) {
				n++
			}
		}
		return n >= 4
	})

	// Each daemon warned once, and said which rules.
	for _, c := range []struct {
		d             httpDaemon
		materialises  bool
		healthz, part string
	}{{a, false, "sits out", "0"}, {b, true, "materialises", "1"}} {
		if n := c.d.count("daemons run different configs"); n != 1 {
			t.Errorf("%s warned %d times, want once:\n%s", c.d.name, n, c.d.log())
		}
		e := c.d.entries("daemons run different configs")[0]
		if e["materialises"] != c.materialises || e["configs"] != 2.0 {
			t.Errorf("%s's warning = %v, want materialises=%v, configs=2", c.d.name, e, c.materialises)
		}
		code, body := c.d.get(t, "/healthz")
		if code != http.StatusOK || !strings.Contains(body, "configs differ: the live daemons run 2 different configs") ||
			!strings.Contains(body, "this daemon's beat "+c.healthz) {
			t.Errorf("%s /healthz = %d %q, want 200 saying the configs differ and that its beat %s", c.d.name, code, body, c.healthz)
		}
		if v := c.d.metric(t, "scheduler_daemons_configs"); v != "2" {
			t.Errorf("%s: scheduler_daemons_configs %q, want 2", c.d.name, v)
		}
		if v := c.d.metric(t, "scheduler_beat_materialising"); v != c.part {
			t.Errorf("%s: scheduler_beat_materialising %q, want %s", c.d.name, v, c.part)
		}
	}
	status := s.mustCLI("-status")
	if !strings.Contains(status, "WARNING: the live daemons run 2 different configs") {
		t.Errorf("-status does not warn that the configs differ:\n%s", status)
	}
	var rep struct {
		Configs struct {
			Count  int    `json:"count"`
			Ruling string `json:"ruling_sha256"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(s.mustCLI("-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	bSHA, _ := b.entries("daemons run different configs")[0]["config_sha256"].(string)
	if rep.Configs.Count != 2 || rep.Configs.Ruling != bSHA || bSHA == "" {
		t.Errorf("-status -json configs = %+v, want 2, ruled by B's %s", rep.Configs, bSHA)
	}

	// A takes B's file: they agree, and say so.
	if err := os.WriteFile(s.config, []byte(configsFile(3, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	a.signal(syscall.SIGHUP)
	a.waitMsg("config reloaded", 1)
	for _, d := range []httpDaemon{a, b} {
		d.waitMsg("daemons agree on the config", 1)
		if code, body := d.get(t, "/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("%s /healthz after the reload = %d %q, want 200 ok", d.name, code, body)
		}
		if v := d.metric(t, "scheduler_daemons_configs"); v != "1" {
			t.Errorf("%s: scheduler_daemons_configs after the reload %q, want 1", d.name, v)
		}
	}
	if status := s.mustCLI("-status"); strings.Contains(status, "different configs") {
		t.Errorf("-status still warns after the reload:\n%s", status)
	}

	// No instant was made with part of a config's items; from B's start
	// on, every one has B's, and only_a made none.
	fan := instants("fan")
	for at, items := range fan {
		switch {
		case slices.Equal(items, itemsB):
		case slices.Equal(items, itemsA) && !time.UnixMilli(at).After(bStarted.Add(2*time.Second)):
		default:
			t.Errorf("instant %s of fan has items %v, want %v (or, before B started, %v)",
				time.UnixMilli(at).UTC().Format(time.RFC3339), items, itemsB, itemsA)
		}
	}
	for at := range instants("only_a") {
		if time.UnixMilli(at).After(bStarted.Add(2 * time.Second)) {
			t.Errorf("only_a made an instant at %s, after B started: B's config rules and lacks it",
				time.UnixMilli(at).UTC().Format(time.RFC3339))
		}
	}
	// Every second from A's start on was made by one or the other.
	var ats []int64
	for at := range fan {
		ats = append(ats, at)
	}
	slices.Sort(ats)
	for i := 1; i < len(ats); i++ {
		if ats[i]-ats[i-1] != 1000 {
			t.Errorf("no instant of fan between %s and %s", time.UnixMilli(ats[i-1]).UTC().Format(time.RFC3339),
				time.UnixMilli(ats[i]).UTC().Format(time.RFC3339))
		}
	}
}
