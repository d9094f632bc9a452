package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// site is one installation under test: a directory with schedules.toml, the
// database and the record file the jobs append to.
type site struct {
	t      testing.TB
	dir    string
	config string
	db     string
	record string
	env    []string // added to the environment of every process

	mu      sync.Mutex
	started int // daemons started, to name their logs
}

// newSite makes a site in a fresh directory and writes config to its
// schedules.toml; see writeConfig for the placeholders.
func newSite(t testing.TB, config string) *site {
	t.Helper()
	dir := t.TempDir()
	s := &site{
		t:      t,
		dir:    dir,
		config: filepath.Join(dir, "schedules.toml"),
		db:     filepath.Join(dir, "scheduler.db"),
		record: filepath.Join(dir, "record.log"),
	}
	s.writeConfig(config)
	return s
}

// writeConfig writes schedules.toml, replacing {{REC}} with the recorder's
// path, {{RECORD}} with the record file and {{DIR}} with the site directory.
// It writes a temporary file and renames it, as an operator's editor would,
// so that a reload never reads half a file.
func (s *site) writeConfig(config string) {
	s.t.Helper()
	r := strings.NewReplacer("{{REC}}", recorder, "{{RECORD}}", s.record, "{{DIR}}", s.dir)
	tmp := s.config + ".tmp"
	if err := os.WriteFile(tmp, []byte(r.Replace(config)), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, s.config); err != nil {
		s.t.Fatal(err)
	}
}

func (s *site) path(name string) string { return filepath.Join(s.dir, name) }

// daemon is one scheduler daemon process, logging JSON to a pipe the test
// reads.
type daemon struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process exited and its log is read
	err  error         // Wait's result, valid after done

	mu      sync.Mutex
	lines   []string
	msgs    map[string]int
	changed chan struct{} // closed and replaced when a line arrives
}

// spawn starts a daemon for the site without waiting for it.
func (s *site) spawn(args ...string) *daemon {
	s.t.Helper()
	return s.spawnOn(s.db, args...)
}

// spawnOn starts a daemon for the site on the database db.
func (s *site) spawnOn(db string, args ...string) *daemon {
	s.t.Helper()
	return s.spawnWith(db, nil, args...)
}

// spawnWith starts a daemon for the site on the database db, with env added
// to its environment after the site's.
func (s *site) spawnWith(db string, env []string, args ...string) *daemon {
	s.t.Helper()
	s.mu.Lock()
	s.started++
	n := s.started
	s.mu.Unlock()
	all := append([]string{"-config", s.config, "-db", db, "-log-format", "json"}, args...)
	d := &daemon{
		t:       s.t,
		name:    "daemon " + strconv.Itoa(n),
		cmd:     exec.Command(binary, all...),
		done:    make(chan struct{}),
		msgs:    map[string]int{},
		changed: make(chan struct{}),
	}
	d.cmd.Dir = s.dir
	d.cmd.Env = append(append(os.Environ(), s.env...), env...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go d.read(stderr)
	s.t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.cmd.Process.Signal(syscall.SIGCONT)
			d.cmd.Process.Kill()
			<-d.done
		}
		if s.t.Failed() {
			s.t.Logf("%s log (last lines):\n%s", d.name, d.tail(60))
		}
	})
	return d
}

// start starts a daemon and waits until it logs that it started.
func (s *site) start(args ...string) *daemon {
	s.t.Helper()
	d := s.spawn(args...)
	d.waitMsg("scheduler started", 1)
	return d
}

func (d *daemon) read(r interface{ Read([]byte) (int, error) }) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var e struct {
			Msg string `json:"msg"`
		}
		json.Unmarshal([]byte(line), &e)
		d.mu.Lock()
		d.lines = append(d.lines, line)
		if e.Msg != "" {
			d.msgs[e.Msg]++
		}
		close(d.changed)
		d.changed = make(chan struct{})
		d.mu.Unlock()
	}
	d.err = d.cmd.Wait()
	close(d.done)
}

// count returns how often the daemon logged msg.
func (d *daemon) count(msg string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.msgs[msg]
}

// log returns the whole log so far.
func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

func (d *daemon) tail(n int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines[max(len(d.lines)-n, 0):], "\n")
}

// entries returns the log lines with message msg, decoded.
func (d *daemon) entries(msg string) []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []map[string]any
	for _, l := range d.lines {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["msg"] == msg {
			out = append(out, e)
		}
	}
	return out
}

// waitMsg waits until the daemon logged msg n times; the daemon exiting
// first fails the test.
func (d *daemon) waitMsg(msg string, n int) {
	d.t.Helper()
	d.waitFor(fmt.Sprintf("%q logged %d times", msg, n), func() bool { return d.msgs[msg] >= n })
}

// startedCursors waits until the daemon logged "schedule started" for each
// of names and returns the cursor each was created at, as the log says. It
// waits by name, not by count: the beat starts all the file's schedules,
// in the order of their names, and names may be only some of them.
func (d *daemon) startedCursors(names ...string) map[string]cursorRow {
	d.t.Helper()
	out := map[string]cursorRow{}
	var bad string // a line without a cursor; cond runs under the lock, so it cannot fail the test
	d.waitFor(fmt.Sprintf("\"schedule started\" logged for %v", names), func() bool {
		for _, l := range d.lines {
			var e struct {
				Msg, Schedule, Cursor string
			}
			if json.Unmarshal([]byte(l), &e) != nil || e.Msg != "schedule started" {
				continue
			}
			at, err := time.Parse(time.RFC3339, e.Cursor)
			if err != nil {
				bad = l
				return true
			}
			out[e.Schedule] = cursorRow{At: at}
		}
		for _, n := range names {
			if _, ok := out[n]; !ok {
				return false
			}
		}
		return true
	})
	if bad != "" {
		d.t.Fatalf("schedule started without a cursor: %s", bad)
	}
	return out
}

// waitFor waits until cond, evaluated under the log's lock whenever a line
// arrives, holds.
func (d *daemon) waitFor(what string, cond func() bool) {
	d.t.Helper()
	timeout := time.After(deadline) // failure deadline, not a sync point
	for {
		d.mu.Lock()
		ok, ch := cond(), d.changed
		d.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-d.done:
			d.mu.Lock()
			ok := cond()
			d.mu.Unlock()
			if !ok {
				d.t.Fatalf("%s exited (%v) while waiting for %s", d.name, d.err, what)
			}
			return
		case <-timeout:
			d.t.Fatalf("%s: timed out waiting for %s", d.name, what)
		}
	}
}

// exited reports whether the process has exited.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the daemon.
func (d *daemon) signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("%s: signal %v: %v", d.name, sig, err)
	}
}

// kill SIGKILLs the daemon and waits until it is gone.
func (d *daemon) kill() {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.wait()
}

// stop sends SIGTERM and returns the exit error once the daemon is gone.
func (d *daemon) stop() error {
	d.t.Helper()
	d.signal(syscall.SIGTERM)
	return d.wait()
}

// wait waits for the daemon to exit and returns Wait's error.
func (d *daemon) wait() error {
	d.t.Helper()
	select {
	case <-d.done:
		return d.err
	case <-time.After(deadline): // failure deadline, not a sync point
		d.t.Fatalf("%s did not exit", d.name)
		return nil
	}
}

// exitCode is the process's exit code, or -1 when a signal ended it.
func (d *daemon) exitCode() int {
	return d.cmd.ProcessState.ExitCode()
}

// result is one run of the CLI.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// cli runs the scheduler once against the site's config and database.
func (s *site) cli(args ...string) result {
	s.t.Helper()
	return s.cliContext(context.Background(), args...)
}

// cliContext is cli with a context that can kill the process.
func (s *site) cliContext(ctx context.Context, args ...string) result {
	s.t.Helper()
	all := append([]string{"-config", s.config, "-db", s.db}, args...)
	return run(s.t, ctx, s.dir, s.env, all...)
}

// mustCLI runs the CLI and fails the test unless it exits 0.
func (s *site) mustCLI(args ...string) string {
	s.t.Helper()
	r := s.cli(args...)
	if r.code != 0 {
		s.t.Fatalf("scheduler %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// run runs the scheduler binary once in dir. A process that a cancelled ctx
// killed has code -1.
func run(t testing.TB, ctx context.Context, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Errorf("scheduler %v was still running after %v, killed: %v", args, r.took.Round(time.Millisecond), r)
		r.code = -1
	case ctx.Err() != nil:
		r.code = -1 // killed by the caller
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Errorf("run scheduler %v: %v", args, err)
		r.code = -1
	}
	return r
}

// eventually polls cond until it holds; the deadline fails the test. It
// polls what another process writes (a file, the database), so there is no
// event to wait on.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, deadline, what, cond)
}

func eventuallyWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond) // poll period of another process's effect, not a sync point
	}
}

// holds checks cond repeatedly for d of real time and fails the test the
// first time it does not hold: for invariants that must stay true while
// nothing happens (a clock that went back must not make the beat run).
func holds(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond) // poll period of the observation window
	}
}

// processAlive reports whether pid names a process that is not a zombie.
func processAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// groupMembers returns the live (not zombie) processes of process group
// pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After the name: state ppid pgrp ...
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}
