package queue

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// crashRuns is how many times TestCrashKillNineLosesNothing kills its child;
// SCHEDULER_CRASH_RUNS raises it for a long run.
func crashRuns() int {
	if n, err := strconv.Atoi(os.Getenv("SCHEDULER_CRASH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 12
}

// TestHelperProcess is the child of the crash test: it enqueues jobs, printing
// "ack N" after each Enqueue returns, while a pool drains them, until it is
// killed. Every run of a handler is appended to a log before it returns.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("QUEUE_CRASH_HELPER") != "1" {
		t.Skip("helper process for the crash test")
	}
	path, run, runLog := os.Getenv("QUEUE_DB"), os.Getenv("QUEUE_RUN"), os.Getenv("QUEUE_RUNLOG")
	ctx := context.Background()
	q, err := openSQLite(ctx, path, sqlite.Config{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	log, err := os.OpenFile(runLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		os.Exit(3)
	}
	p, err := NewPool(q, PoolConfig{Workers: 4, Lease: 2 * time.Second})
	if err != nil {
		os.Exit(3)
	}
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		// A write(2) survives the process being killed; the completion is
		// committed only after it.
		fmt.Fprintf(log, "%s %d\n", j.Key, j.Attempt)
		if j.ID%7 == 0 && j.Attempt == 1 {
			return RetryAfter(0, fmt.Errorf("transient"))
		}
		return nil
	}), TypeConfig{})
	go p.Run(ctx)
	// Three producers, so that enqueues share transactions (group commit)
	// when the kill comes.
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	say := func(lines ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
		out.Flush()
	}
	produce := func(g int) {
		for i := 0; ; i++ {
			key := fmt.Sprintf("run%s-g%d-%d", run, g, i)
			if i%10 == 9 {
				var batch []NewJob
				var acks []string
				for b := range 5 {
					batch = append(batch, NewJob{Type: "t", Key: fmt.Sprintf("%s-b%d", key, b)})
					acks = append(acks, "ack "+batch[b].Key)
				}
				if _, err := q.EnqueueBatch(ctx, batch); err != nil {
					say(fmt.Sprint("error ", err))
				} else {
					say(acks...)
				}
				continue
			}
			if _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: key}); err != nil {
				say(fmt.Sprint("error ", err))
			} else {
				say("ack " + key)
			}
		}
	}
	go produce(1)
	go produce(2)
	produce(0)
}

// TestCrashKillNineLosesNothing kills a process that enqueues and drains
// jobs with SIGKILL at random moments, many times, and checks after each
// kill and at the end: the file passes integrity_check, every acknowledged
// enqueue is present exactly once, every done job really ran, and after a
// reclaim nothing stays running and everything drains.
func TestCrashKillNineLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	t.Parallel()
	dir := t.TempDir()
	path, runLog := filepath.Join(dir, "q.db"), filepath.Join(dir, "runs.log")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	acked := map[string]bool{}
	runs := crashRuns()
	for run := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmd.Env = append(os.Environ(), "QUEUE_CRASH_HELPER=1", "QUEUE_DB="+path,
			"QUEUE_RUN="+strconv.Itoa(run), "QUEUE_RUNLOG="+runLog)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + rng.IntN(60) // acknowledgements to wait for
		sc := bufio.NewScanner(stdout)
		n := 0
		for n < killAfter && sc.Scan() {
			line := sc.Text()
			key, ok := strings.CutPrefix(line, "ack ")
			if !ok {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child said %q", line)
			}
			acked[key] = true
			n++
		}
		// Some kills land mid-transaction, some between: a random extra delay.
		if d := rng.IntN(3); d > 0 {
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond) // chooses the kill instant; not a sync point
		}
		cmd.Process.Signal(syscall.SIGKILL)
		// Lines printed before the kill are acknowledgements too.
		for sc.Scan() {
			if key, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
				acked[key] = true
			}
		}
		cmd.Wait()
		checkCrashInvariants(t, path, runLog, acked, false)
	}
	checkCrashInvariants(t, path, runLog, acked, true)
	t.Logf("%d kills, %d acknowledged jobs, none lost", runs, len(acked))
}

func checkCrashInvariants(t *testing.T, path, runLog string, acked map[string]bool, drain bool) {
	t.Helper()
	ctx := context.Background()
	// Far in the future: every lease left by the killed child has expired.
	clk := clock.NewFake(time.Now().Add(time.Hour))
	q, err := openSQLite(ctx, path, sqlite.Config{Clock: clk})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer q.Close()
	db := rawDB(t, q)
	var integrity string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check = %q, %v", integrity, err)
	}
	keys := map[string]int{}
	rows, err := db.Query("SELECT key FROM jobs")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		keys[k]++
	}
	rows.Close()
	for k := range acked {
		if keys[k] != 1 {
			t.Fatalf("acknowledged job %s present %d times", k, keys[k])
		}
	}
	ran := map[string]bool{}
	data, _ := os.ReadFile(runLog)
	for _, line := range strings.Split(string(data), "\n") {
		if k, _, ok := strings.Cut(line, " "); ok {
			ran[k] = true
		}
	}
	done, err := db.Query(`SELECT key FROM jobs WHERE state = 'done'`)
	if err != nil {
		t.Fatal(err)
	}
	for done.Next() {
		var k string
		if err := done.Scan(&k); err != nil {
			t.Fatal(err)
		}
		if !ran[k] {
			t.Fatalf("job %s is done but never ran", k)
		}
	}
	done.Close()
	if _, err := reclaim(ctx, q); err != nil {
		t.Fatal(err)
	}
	s, _ := q.Stats(ctx)
	if s.Total[StateRunning] != 0 {
		t.Fatalf("%d jobs still running after reclaim", s.Total[StateRunning])
	}
	if s.Total[StateDead] != 0 {
		t.Fatalf("%d dead jobs: attempts were lost", s.Total[StateDead])
	}
	if !drain {
		return
	}
	p, err := NewPool(q, PoolConfig{Workers: 4, MaintenanceEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
	stop := runPool(t, p)
	defer stop()
	total := len(keys)
	eventually(t, "drain after crashes", func() bool {
		s, _ := q.Stats(ctx)
		return s.Total[StateDone] == total
	})
}

// TestDrainHelperProcess is a child of TestTwoProcessesNeverRunTheSameJob: it
// drains the queue, appending "key attempt pid" for every run, until killed.
func TestDrainHelperProcess(t *testing.T) {
	if os.Getenv("QUEUE_DRAIN_HELPER") != "1" {
		t.Skip("helper process for the two-process test")
	}
	ctx := context.Background()
	q, err := openSQLite(ctx, os.Getenv("QUEUE_DB"), sqlite.Config{})
	if err != nil {
		os.Exit(3)
	}
	log, err := os.OpenFile(os.Getenv("QUEUE_RUNLOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		os.Exit(3)
	}
	// Without prefetch each process claims at most 4 jobs per transaction: the
	// two race for every claim.
	p, err := NewPool(q, PoolConfig{Workers: 4, Prefetch: -1})
	if err != nil {
		os.Exit(3)
	}
	pid := os.Getpid()
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		fmt.Fprintf(log, "%s %d %d\n", j.Key, j.Attempt, pid)
		time.Sleep(time.Millisecond) // the job's work, long enough for both processes to get some
		return nil
	}), TypeConfig{})
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n') // "go": both processes start together
	p.Run(ctx)
}

// TestTwoProcessesNeverRunTheSameJob: two processes draining one file claim
// disjoint jobs: every job runs exactly once.
func TestTwoProcessesNeverRunTheSameJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	t.Parallel()
	dir := t.TempDir()
	path, runLog := filepath.Join(dir, "q.db"), filepath.Join(dir, "runs.log")
	ctx := context.Background()
	q, err := openSQLite(ctx, path, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	// All jobs wait before the processes start, so both race for them.
	const n = 2000
	for i := 0; i < n; i += 100 {
		var batch []NewJob
		for k := i; k < i+100; k++ {
			batch = append(batch, NewJob{Type: "t", Key: fmt.Sprint("j", k)})
		}
		if _, err := q.EnqueueBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	var children []*exec.Cmd
	var goes []io.WriteCloser
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDrainHelperProcess$")
		cmd.Env = append(os.Environ(), "QUEUE_DRAIN_HELPER=1", "QUEUE_DB="+path, "QUEUE_RUNLOG="+runLog)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		goes = append(goes, in)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, cmd)
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			t.Fatalf("child did not start: %q", sc.Text())
		}
	}
	for _, in := range goes {
		io.WriteString(in, "go\n")
	}
	eventually(t, "all done", func() bool { s, _ := q.Stats(ctx); return s.Total[StateDone] == n })
	for _, c := range children {
		c.Process.Kill()
		c.Wait()
	}
	runs := map[string]int{}
	pids := map[string]int{}
	data, _ := os.ReadFile(runLog)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		runs[f[0]]++
		pids[f[2]]++
	}
	for k, c := range runs {
		if c != 1 {
			t.Errorf("job %s ran %d times", k, c)
		}
	}
	if len(runs) != n {
		t.Errorf("%d jobs ran, want %d", len(runs), n)
	}
	if len(pids) != 2 {
		// SQLite's busy handler is not fair: a loaded machine can let one
		// process win every claim. The run proved nothing about two
		// claimers then, but nothing wrong either.
		t.Logf("only %d process took part: %v", len(pids), pids)
	}
	t.Logf("runs per process: %v", pids)
}
