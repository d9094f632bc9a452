package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lifelineScript records a run of its job in $1 and starts a process in its
// group and one that leaves it (setsid), then runs until the file $2
// exists. Its lines, each one append:
//
//	start JOB_ID PID START_NS
//	pids PID GROUP_MEMBER SUPERVISOR
//	escaped PID ESCAPED
//	end JOB_ID PID END_NS
const lifelineScript = `
echo "start $SCHEDULER_JOB_ID $$ $(date +%s%N)" >> "$1"
sleep 600 &
echo "pids $$ $! $PPID" >> "$1"
setsid sh -c 'echo "escaped $1 $$" >> "$2"; exec sleep 600' sh "$$" "$1" &
while [ ! -e "$2" ]; do sleep 0.1; done
echo "end $SCHEDULER_JOB_ID $$ $(date +%s%N)" >> "$1"
`

// lifelineConfig runs lifelineScript for each item of the schedule "long",
// with a short lease so that a killed daemon's jobs run again soon.
func lifelineConfig(workers, items int) string {
	var each []string
	for i := range items {
		each = append(each, fmt.Sprintf("{ n = %d }", i))
	}
	return fmt.Sprintf(`
[scheduler]
workers = %d
lease = "3s"
maintenance_every = "1s"
shutdown_grace = "1s"

[tasks.long]
command = ["sh", "-c", %q, "sh", "{{DIR}}/runs.log", "{{DIR}}/release"]
max_attempts = 5
kill_grace = "1s"

[[schedule]]
name = "long"
cron = "0 0 1 1 *"
task = "long"
for_each = [ %s ]
`, workers, lifelineScript, strings.Join(each, ", "))
}

// cmdRun is one run of lifelineScript, as its lines and the test saw it.
type cmdRun struct {
	job        string
	pid        int
	start, end time.Time // end is zero for a run that did not finish
	pids       []int     // program, group member, supervisor, escaped
	complete   bool      // every pid is known
	gone       time.Time // when the test first saw every pid gone
}

// runWatch follows the runs of a site through runs.log and /proc.
type runWatch struct {
	t    *testing.T
	path string
	runs map[int]*cmdRun // by program pid
	// overlaps are the runs that started while an earlier run of their
	// job was alive.
	overlaps []string
}

func newRunWatch(t *testing.T, s *site) *runWatch {
	return &runWatch{t: t, path: s.path("runs.log"), runs: map[int]*cmdRun{}}
}

// poll reads the log again, notes when each unfinished run's processes are
// all gone and, for a run that appears, checks that every earlier run of
// its job is over: ended, or with no process left.
func (w *runWatch) poll() {
	w.t.Helper()
	data, err := os.ReadFile(w.path)
	if err != nil && !os.IsNotExist(err) {
		w.t.Fatal(err)
	}
	text := string(data)
	text = text[:strings.LastIndexByte(text, '\n')+1] // whole lines only
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 3 {
			w.t.Fatalf("runs.log line %q", line)
		}
		pid, _ := strconv.Atoi(f[2])
		if f[0] == "pids" || f[0] == "escaped" {
			pid, _ = strconv.Atoi(f[1])
		}
		r := w.runs[pid]
		switch {
		case f[0] == "start" && r == nil:
			ns, _ := strconv.ParseInt(f[3], 10, 64)
			r = &cmdRun{job: f[1], pid: pid, start: time.Unix(0, ns), pids: []int{pid}}
			w.checkAlone(r)
			w.runs[pid] = r
		case r == nil || f[0] == "start":
		case f[0] == "pids" && len(r.pids) == 1:
			for _, p := range f[2:] {
				n, _ := strconv.Atoi(p)
				r.pids = append(r.pids, n)
			}
		case f[0] == "escaped" && len(r.pids) == 3:
			n, _ := strconv.Atoi(f[2])
			r.pids = append(r.pids, n)
			r.complete = true
		case f[0] == "end" && r.end.IsZero():
			ns, _ := strconv.ParseInt(f[3], 10, 64)
			r.end = time.Unix(0, ns)
		}
	}
	for _, r := range w.runs {
		if r.complete && r.end.IsZero() && r.gone.IsZero() && !r.alive() {
			r.gone = time.Now()
		}
	}
}

// checkAlone records an overlap when a run of r's job is still going.
func (w *runWatch) checkAlone(r *cmdRun) {
	for _, prev := range w.runs {
		if prev.job != r.job {
			continue
		}
		if !prev.end.IsZero() && prev.end.After(r.start) || prev.end.IsZero() && prev.alive() {
			w.overlaps = append(w.overlaps, fmt.Sprintf("job %s: run %d started while run %d was going (processes %v)", r.job, r.pid, prev.pid, prev.pids))
		}
	}
}

func (r *cmdRun) alive() bool {
	return slices.ContainsFunc(r.pids, processAlive)
}

// waitFor polls until cond holds.
func (w *runWatch) waitFor(what string, cond func() bool) {
	w.t.Helper()
	eventually(w.t, what, func() bool {
		w.poll()
		return cond()
	})
}

// started waits until n runs are under way with every pid known and returns
// them.
func (w *runWatch) started(n int) []*cmdRun {
	w.t.Helper()
	var out []*cmdRun
	w.waitFor(fmt.Sprintf("%d runs started", n), func() bool {
		out = out[:0]
		for _, r := range w.runs {
			if r.complete && r.end.IsZero() {
				out = append(out, r)
			}
		}
		return len(out) >= n
	})
	return out
}

// killAtCleanup kills every recorded process still alive when the test
// ends, whatever it found.
func (w *runWatch) killAtCleanup() {
	w.t.Cleanup(func() {
		for _, r := range w.runs {
			for _, p := range r.pids {
				if processAlive(p) && p > 1 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
	})
}

// descendsFrom reports whether pid is ancestor or one of its descendants.
func descendsFrom(pid, ancestor int) bool {
	for ; pid > 1; pid = parentOf(pid) {
		if pid == ancestor {
			return true
		}
	}
	return false
}

// parentOf is pid's parent, from /proc; 0 when pid is gone.
func parentOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func needSetsid(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
}

// TestKilledDaemonTakesItsCommands: a daemon SIGKILLed while its command
// runs takes the command with it (the program, a process of its group and
// one that left the group), so that when a second daemon on the same
// database reclaims the job once its lease expired and runs it again, the
// first run is over: one job never runs twice at once.
func TestKilledDaemonTakesItsCommands(t *testing.T) {
	t.Parallel()
	needSetsid(t)
	s := newSite(t, lifelineConfig(1, 1))
	w := newRunWatch(t, s)
	w.killAtCleanup()
	d1 := s.start()
	id, _ := s.trigger("long")
	first := w.started(1)[0]

	killed := time.Now()
	d1.kill()
	d2 := s.start()
	w.waitFor("the job's second run", func() bool { return len(w.runs) == 2 })
	if first.gone.IsZero() {
		t.Errorf("the first run's processes %v were still alive when the job ran again", first.pids)
	} else {
		t.Logf("first run's processes %v (program, group member, supervisor, setsid'd) gone %v after the daemon's SIGKILL; the job ran again %v after it",
			first.pids, first.gone.Sub(killed).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	}
	if err := os.WriteFile(s.path("release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job done", func() bool { return s.job(id).State == "done" })
	if err := d2.stop(); err != nil {
		t.Errorf("second daemon: %v", err)
	}
	w.poll()
	for _, o := range w.overlaps {
		t.Error(o)
	}
}

// TestPostgresKilledNodeTakesItsCommands: three nodes each run two
// commands; one node is SIGKILLed. Its commands die with it, the other
// nodes run its jobs again once their leases expired, and no job runs on
// two nodes at once.
func TestPostgresKilledNodeTakesItsCommands(t *testing.T) {
	t.Parallel()
	needSetsid(t)
	dsn := pgSchema(t)
	s := newSite(t, lifelineConfig(2, 6))
	s.db = dsn
	db := openPG(t, dsn)
	w := newRunWatch(t, s)
	w.killAtCleanup()
	nodes := make([]*daemon, 3)
	for i := range nodes {
		nodes[i] = s.spawn()
	}
	for _, d := range nodes {
		d.waitMsg("scheduler started", 1)
	}
	s.mustCLI("-trigger", "long")
	runs := w.started(6)

	down := nodes[0]
	var doomed []*cmdRun
	for _, r := range runs {
		if descendsFrom(r.pid, down.cmd.Process.Pid) {
			doomed = append(doomed, r)
		}
	}
	if len(doomed) == 0 {
		t.Fatalf("no run on node %d (pid %d) among %d", 1, down.cmd.Process.Pid, len(runs))
	}
	killed := time.Now()
	down.kill()
	w.waitFor("the killed node's commands gone", func() bool {
		return !slices.ContainsFunc(doomed, func(r *cmdRun) bool { return r.gone.IsZero() })
	})
	for _, r := range doomed {
		t.Logf("run %d of job %s on the killed node: processes %v gone %v after the SIGKILL",
			r.pid, r.job, r.pids, r.gone.Sub(killed).Round(time.Millisecond))
	}
	if err := os.WriteFile(s.path("release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.waitFor("every job done", func() bool {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state <> 'done'`) == 0
	})
	for _, d := range nodes[1:] {
		if err := d.stop(); err != nil {
			t.Errorf("%s: %v", d.name, err)
		}
	}
	w.poll()
	if n := len(w.runs); n != 6+len(doomed) {
		t.Errorf("%d runs, want %d: one per job and one more for each job of the killed node", n, 6+len(doomed))
	}
	for _, o := range w.overlaps {
		t.Error(o)
	}
}
