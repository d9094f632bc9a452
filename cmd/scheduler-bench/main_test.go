package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// peerbenchKeys are the keys peerbench's summary requires on every line.
var peerbenchKeys = []string{"system", "cfg", "phase", "jobs", "workers", "seconds", "jobs_per_s", "dup", "lost", "rep"}

// numericKeys must parse as numbers wherever they appear.
var numericKeys = []string{"jobs", "workers", "seconds", "jobs_per_s", "dup", "lost", "rep", "errs", "cpu_s", "srv_cpu_s",
	"db_done", "db_jobs", "handled_s", "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms"}

type resultLine map[string]string

// parseResults splits output into result lines the way peerbench's summary
// does, failing on anything it would misread.
func parseResults(t *testing.T, out string) []resultLine {
	t.Helper()
	var lines []resultLine
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "system=") {
			t.Errorf("stdout line %q does not start with system=", line)
			continue
		}
		r := resultLine{}
		for _, tok := range strings.Fields(line) {
			k, v, ok := strings.Cut(tok, "=")
			if !ok || k == "" || v == "" {
				t.Errorf("token %q of line %q is not key=value", tok, line)
			}
			if _, dup := r[k]; dup {
				t.Errorf("key %s twice in line %q", k, line)
			}
			r[k] = v
		}
		for _, k := range peerbenchKeys {
			if _, ok := r[k]; !ok {
				t.Errorf("line %q lacks %s=", line, k)
			}
		}
		if r["phase"] == "latency" {
			for _, k := range []string{"p50_ms", "p99_ms", "max_ms"} {
				if _, ok := r[k]; !ok {
					t.Errorf("latency line %q lacks %s=", line, k)
				}
			}
		}
		for _, k := range numericKeys {
			if v, ok := r[k]; ok {
				if _, err := strconv.ParseFloat(v, 64); err != nil {
					t.Errorf("line %q: %s=%s is not a number", line, k, v)
				}
			}
		}
		lines = append(lines, r)
	}
	return lines
}

func (r resultLine) num(t *testing.T, k string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(r[k], 64)
	if err != nil {
		t.Fatalf("%s/%s: %s=%q: %v", r["cfg"], r["phase"], k, r[k], err)
	}
	return x
}

// checkLines checks the lines against the expected cfg/phase pairs and the
// values every correct run has.
func checkLines(t *testing.T, lines []resultLine, want []string, jobs, workers, rep int) map[string]resultLine {
	t.Helper()
	return checkSystemLines(t, systemName, lines, want, jobs, workers, rep)
}

// checkSystemLines is checkLines for the lines of system.
func checkSystemLines(t *testing.T, system string, lines []resultLine, want []string, jobs, workers, rep int) map[string]resultLine {
	t.Helper()
	got := map[string]resultLine{}
	var order []string
	for _, r := range lines {
		id := r["cfg"] + "/" + r["phase"]
		got[id] = r
		order = append(order, id)
		if r["system"] != system {
			t.Errorf("%s: system=%s, want %s", id, r["system"], system)
		}
		if got := r.num(t, "rep"); got != float64(rep) {
			t.Errorf("%s: rep=%v, want %d", id, got, rep)
		}
		if got := r.num(t, "jobs"); got != float64(jobs) {
			t.Errorf("%s: jobs=%v, want %d", id, got, jobs)
		}
		wantWorkers := workers
		switch {
		case r["cfg"] == cfgProducers:
			wantWorkers = producers
		case r["phase"] == "enqueue":
			wantWorkers = 1
		}
		if got := r.num(t, "workers"); got != float64(wantWorkers) {
			t.Errorf("%s: workers=%v, want %d", id, got, wantWorkers)
		}
		for _, k := range []string{"dup", "lost", "errs"} {
			if got := r.num(t, k); got != 0 {
				t.Errorf("%s: %s=%v, want 0", id, k, got)
			}
		}
		if r.num(t, "seconds") <= 0 || r.num(t, "jobs_per_s") <= 0 {
			t.Errorf("%s: seconds=%s jobs_per_s=%s, want both positive", id, r["seconds"], r["jobs_per_s"])
		}
		switch r["phase"] {
		case "enqueue":
			if got := r.num(t, "db_jobs"); got != float64(jobs) {
				t.Errorf("%s: db_jobs=%v, want %d", id, got, jobs)
			}
		case "drain", "latency":
			if got := r.num(t, "db_done"); got != float64(jobs) {
				t.Errorf("%s: db_done=%v, want %d", id, got, jobs)
			}
		}
		if r["phase"] == "latency" {
			p50, p99, pmax := r.num(t, "p50_ms"), r.num(t, "p99_ms"), r.num(t, "max_ms")
			if p50 < 0 || p50 > p99 || p99 > pmax {
				t.Errorf("%s: p50 %v, p99 %v, max %v: want 0 <= p50 <= p99 <= max", id, p50, p99, pmax)
			}
		}
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("lines = %v, want %v", order, want)
	}
	return got
}

// TestThroughput runs the command line run.sh uses for a throughput run, on a
// -db path where stale files of an earlier run lie, plus peerbench flags that
// mean nothing here.
func TestThroughput(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "bench.db")
	for _, p := range []string{db, db + "-wal", db + ".batch100", db + ".producers8-shm"} {
		if err := os.WriteFile(p, []byte("stale, not a database"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	args := []string{"-rep", "7", "-workers", "4", "-jobs", "300", "-db", db,
		"-system", "scheduler", "-poll", "10ms", "-cooldown", "10ms"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q): %v\nstderr:\n%s", args, err, stderr.String())
	}
	lines := parseResults(t, stdout.String())
	checkLines(t, lines, []string{"default/enqueue", "default/drain", "batch100/enqueue", "producers8/enqueue"}, 300, 4, 7)
	checkStderr(t, stderr.String())
	if _, err := os.Stat(db); err != nil {
		t.Errorf("-db file not kept: %v", err)
	}
}

// TestLatency runs a short latency run of every configuration.
func TestLatency(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	args := []string{"-rep", "2", "-workers", "4", "-mode", "latency", "-latjobs", "50", "-warmup", "100ms"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q): %v\nstderr:\n%s", args, err, stderr.String())
	}
	lines := parseResults(t, stdout.String())
	checkLines(t, lines, []string{"default/latency", "otherconn/latency"}, 50, 4, 2)
	checkStderr(t, stderr.String())
}

// checkStderr fails on anything but the info lines run.sh collects.
func checkStderr(t *testing.T, stderr string) {
	t.Helper()
	checkSystemStderr(t, systemName, stderr)
}

func checkSystemStderr(t *testing.T, system, stderr string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(line, "info system="+system+" ") {
			t.Errorf("unexpected stderr line %q", line)
		}
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr bool
		check   func(o options) bool
	}{
		{"defaults", nil, false, func(o options) bool {
			return o.mode == modeThroughput && o.jobs == 20000 && o.workers == 8 && o.latJobs == 2000 && o.profPhase == profDrain
		}},
		{"run.sh latency", []string{"-rep", "3", "-workers", "8", "-mode", "latency", "-latjobs", "500"}, false, func(o options) bool {
			return o.rep == 3 && o.mode == modeLatency && o.latJobs == 500 && o.profPhase == profLatency
		}},
		{"peerbench knobs ignored", []string{"-system", "scheduler", "-poll", "1s", "-cooldown", "1ms", "-rawsecs", "1s", "-baseline", "x"}, false, nil},
		{"other system", []string{"-system", "naive"}, true, nil},
		{"unknown mode", []string{"-mode", "fast"}, true, nil},
		{"nodes", []string{"-mode", "nodes", "-nodes", "3"}, false, func(o options) bool { return o.nodes == 3 && o.profPhase == profAll }},
		{"zero nodes", []string{"-mode", "nodes", "-nodes", "0"}, true, nil},
		{"zero jobs", []string{"-jobs", "0"}, true, nil},
		{"unknown flag", []string{"-nosuch"}, true, nil},
		{"stray argument", []string{"bench"}, true, nil},
		{"unknown profphase", []string{"-profphase", "claim"}, true, nil},
		{"profphase of the other mode", []string{"-mode", "latency", "-profphase", "drain"}, true, nil},
		{"profphase all", []string{"-mode", "latency", "-profphase", "all"}, false, func(o options) bool { return o.profPhase == profAll }},
		{"run.sh SELF_PG_CMD", []string{"-rep", "1", "-workers", "8", "-jobs", "20000", "-dsn", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"}, false, func(o options) bool {
			return o.dsn == "postgres://postgres@127.0.0.1:5432/test?sslmode=disable" && o.system() == "scheduler-pg"
		}},
		{"postgresql scheme", []string{"-dsn", "postgresql://h/db"}, false, func(o options) bool { return o.system() == "scheduler-pg" }},
		{"sqlite system name", nil, false, func(o options) bool { return o.system() == "scheduler" }},
		{"-system scheduler-pg with -dsn", []string{"-dsn", "postgres://h/db", "-system", "scheduler-pg"}, false, nil},
		{"-system scheduler-pg without -dsn", []string{"-system", "scheduler-pg"}, true, nil},
		{"-dsn and -db", []string{"-dsn", "postgres://h/db", "-db", "x.db"}, true, nil},
		{"keyword form", []string{"-dsn", "host=127.0.0.1 dbname=test"}, true, nil},
		{"empty-scheme path", []string{"-dsn", "bench.db"}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseFlags(tt.args, &bytes.Buffer{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseFlags(%q) error = %v, want error %v", tt.args, err, tt.wantErr)
			}
			if err == nil && tt.check != nil && !tt.check(o) {
				t.Errorf("parseFlags(%q) = %+v", tt.args, o)
			}
		})
	}
}

// TestPostgresLines: with -dsn every result line says system=scheduler-pg,
// which peerbench's run.sh keeps apart from the SQLite rows; a run against
// a database that cannot be opened fails without a result line and without
// showing the password.
func TestPostgresLines(t *testing.T) {
	t.Parallel()
	const dsn = "postgres://user:secret@127.0.0.1:1/x?sslmode=disable"
	o, err := parseFlags([]string{"-dsn", dsn, "-rep", "4"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	b := &bench{o: o, stdout: &stdout}
	b.emit(cfgDefault, "enqueue", kv{"jobs", 1}, kv{"workers", 1}, kv{"seconds", 1.0}, kv{"jobs_per_s", 1.0}, kv{"dup", 0}, kv{"lost", 0})
	lines := parseResults(t, stdout.String())
	if len(lines) != 1 || lines[0]["system"] != "scheduler-pg" || lines[0]["rep"] != "4" {
		t.Errorf("emit with -dsn printed %q, want one line of system=scheduler-pg rep=4", stdout.String())
	}

	stdout.Reset()
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"-dsn", dsn, "-jobs", "10"}, &stdout, &stderr)
	if err == nil {
		t.Fatalf("run -dsn %s: no error", dsn)
	}
	if msg := err.Error() + stderr.String(); strings.Contains(msg, "secret") || !strings.Contains(msg, "postgres://user:xxxxx@127.0.0.1:1/x") {
		t.Errorf("run -dsn: %v\nstderr: %s\nwant the URL named without its password", err, stderr.String())
	}
	if stdout.Len() > 0 {
		t.Errorf("run -dsn that failed printed result lines:\n%s", stdout.String())
	}
}

func TestPayloadSeq(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
	}{
		{`{"seq":0}`, 0},
		{`{"seq":1234}`, 1234},
		{`{}`, -1},
		{`{"seq":x}`, -1},
		{`{"seq":12`, -1},
	}
	for _, tt := range tests {
		if got := payloadSeq([]byte(tt.in)); got != tt.want {
			t.Errorf("payloadSeq(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
	if got := payloadSeq(newJob(42).Payload); got != 42 {
		t.Errorf("payloadSeq(newJob(42).Payload) = %d, want 42", got)
	}
}

func TestRecorderTally(t *testing.T) {
	t.Parallel()
	r := newRecorder(4)
	for _, seq := range []int{0, 0, 2, 3, 3, 7} {
		r.handle(seq)
	}
	if dup, lost := r.tally(); dup != 3 || lost != 1 {
		t.Errorf("tally() = dup %d lost %d, want dup 3 lost 1", dup, lost)
	}
	select {
	case <-r.allDone:
		t.Fatal("allDone closed although seq 1 never ran")
	default:
	}
	r.handle(1)
	select {
	case <-r.allDone:
	default:
		t.Fatal("allDone not closed after every seq ran")
	}
}

func TestPct(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {99, 10}, {100, 10}} {
		if got := pct(xs, tt.p); got != tt.want {
			t.Errorf("pct(1..10, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := pct(nil, 50); got != -1 {
		t.Errorf("pct(nil, 50) = %v, want -1", got)
	}
}

// TestEnqueuedElsewhere: the latency of a job enqueued by another process
// counts from the wall-clock time that process reports, also when the job
// ran before the report came.
func TestEnqueuedElsewhere(t *testing.T) {
	t.Parallel()
	r := newRecorder(2)
	r.handle(0)
	start := r.startAt[0].Load()
	enq := r.base.UnixNano() + start - 3e6 // 3 ms before the handler started
	r.enqueuedElsewhere(0, enq)
	r.enqueuedElsewhere(5, enq) // out of range: ignored
	if got := r.startLat[0].Load(); got != 3e6 {
		t.Errorf("latency after enqueuedElsewhere = %d ns, want 3000000", got)
	}
	if lats := r.latenciesMS(); len(lats) != 1 || lats[0] != 3 {
		t.Errorf("latenciesMS() = %v, want [3]", lats)
	}
}
