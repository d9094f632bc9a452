package queue

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"

	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
)

// skipWithoutFileWatch skips a test of the file watch where the platform
// has none.
func skipWithoutFileWatch(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("no file watch here")
	}
}

// idlePool opens a queue on a fresh file with a fake clock that the test
// never moves, and runs a pool on it whose only way to learn of another
// connection's enqueue is the watch: MaxIdle and the poll are an hour. The
// pool reports the keys of the jobs it runs on the returned channel.
func idlePool(t *testing.T, qcfg sqlite.Config, cfg PoolConfig) (path string, clk *clock.Fake, ran <-chan string) {
	t.Helper()
	return idlePoolAt(t, filepath.Join(t.TempDir(), "q.db"), qcfg, cfg)
}

func idlePoolAt(t *testing.T, path string, qcfg sqlite.Config, cfg PoolConfig) (string, *clock.Fake, <-chan string) {
	t.Helper()
	clk := clock.NewFake(t0)
	qcfg.Clock = clk
	q, err := openSQLite(context.Background(), path, qcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	cfg.MaxIdle, cfg.MaintenanceEvery = time.Hour, -1
	if cfg.WatchInterval == 0 {
		cfg.WatchInterval = time.Hour
	}
	p := newTestPool(t, q, cfg)
	ch := make(chan string, 4)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { ch <- j.Key; return nil }), TypeConfig{})
	runPool(t, p)
	// Parked: the loop's, the checkpointer's and the watch's timers; the
	// watch has its first reading.
	clk.BlockUntil(3)
	return path, clk, ch
}

// stepUntil moves the fake clock a millisecond at a time until a job runs,
// and returns its key: the watch re-reads data_version on the clock after
// a write it saw. It stops moving the clock after 20 s of fake time, short
// of the loop's own timers (the pool's record is renewed every 30 s), and
// then only waits.
func stepUntil(t *testing.T, clk *clock.Fake, ran <-chan string) string {
	t.Helper()
	for clk.Now().Sub(t0) < 20*time.Second {
		select {
		case k := <-ran:
			return k
		default:
		}
		clk.Advance(time.Millisecond)
		time.Sleep(time.Millisecond) // lets the watch observe the step; not a sync point
	}
	return waitFor(t, ran)
}

// TestPoolWakesOnFileWatch: a job enqueued through another connection to
// the file (as the CLI's -trigger does from another process) starts
// without any timer firing: the file watch saw the WAL written.
func TestPoolWakesOnFileWatch(t *testing.T) {
	t.Parallel()
	skipWithoutFileWatch(t)
	path, clk, ran := idlePool(t, sqlite.Config{}, PoolConfig{})
	other, err := openSQLite(context.Background(), path, sqlite.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mustEnqueue(t, other, NewJob{Type: "t", Key: "other"})
	// The watch may have read data_version between the WAL's write and
	// the commit's becoming visible: it reads again after a millisecond.
	k := stepUntil(t, clk, ran)
	if k != "other" {
		t.Errorf("ran %q, want other", k)
	}
}

// TestPoolWakesOnFileWatchThroughSymlink: the pool opened the file through
// a symbolic link, whose target's directory holds the -wal file.
func TestPoolWakesOnFileWatchThroughSymlink(t *testing.T) {
	t.Parallel()
	skipWithoutFileWatch(t)
	real, link := filepath.Join(t.TempDir(), "q.db"), filepath.Join(t.TempDir(), "link.db")
	other, err := openSQLite(context.Background(), real, sqlite.Config{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	_, clk, ran := idlePoolAt(t, link, sqlite.Config{}, PoolConfig{})
	mustEnqueue(t, other, NewJob{Type: "t", Key: "other"})
	if k := stepUntil(t, clk, ran); k != "other" {
		t.Errorf("ran %q, want other", k)
	}
}

// TestPoolPollsWithoutFileWatch: without the file watch, the pool reads
// data_version every WatchInterval, and that is how it learns of the job.
func TestPoolPollsWithoutFileWatch(t *testing.T) {
	t.Parallel()
	path, clk, ran := idlePool(t, sqlite.Config{NoFileWatch: true}, PoolConfig{WatchInterval: 2 * time.Second})
	other, err := openSQLite(context.Background(), path, sqlite.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mustEnqueue(t, other, NewJob{Type: "t", Key: "other"})
	select {
	case k := <-ran:
		t.Fatalf("%s ran before the poll", k)
	default:
	}
	clk.Advance(2 * time.Second)
	if k := waitFor(t, ran); k != "other" {
		t.Errorf("ran %q, want other", k)
	}
}

// TestEnqueueHelperProcess is the child of TestPoolWakesOnAnotherProcess:
// it enqueues one job and exits.
func TestEnqueueHelperProcess(t *testing.T) {
	if os.Getenv("QUEUE_ENQUEUE_HELPER") != "1" {
		t.Skip("helper process for TestPoolWakesOnAnotherProcess")
	}
	ctx := context.Background()
	q, err := openSQLite(ctx, os.Getenv("QUEUE_DB"), sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: "child", RunAt: t0}); err != nil {
		t.Fatal(err)
	}
}

// TestPoolWakesOnAnotherProcess: the same across processes, as the CLI's
// -trigger: a child process enqueues, the idle pool starts the job with
// its clock standing still.
func TestPoolWakesOnAnotherProcess(t *testing.T) {
	t.Parallel()
	skipWithoutFileWatch(t)
	path, clk, ran := idlePool(t, sqlite.Config{}, PoolConfig{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnqueueHelperProcess$")
	cmd.Env = append(os.Environ(), "QUEUE_ENQUEUE_HELPER=1", "QUEUE_DB="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	k := stepUntil(t, clk, ran)
	if k != "child" {
		t.Errorf("ran %q, want child", k)
	}
}

// TestOwnCommitsComeToRest: the pool's own commits write the WAL, which
// the file watch reports and which changes data_version; each may wake
// the loop once for a read, but none of those wakes writes, so the loop
// comes to rest instead of waking itself for ever.
func TestOwnCommitsComeToRest(t *testing.T) {
	t.Parallel()
	skipWithoutFileWatch(t)
	clk := clock.NewFake(t0)
	q, err := openSQLite(context.Background(), filepath.Join(t.TempDir(), "q.db"), sqlite.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	p := newTestPool(t, q, PoolConfig{MaxIdle: time.Hour, WatchInterval: time.Hour, MaintenanceEvery: -1})
	ran := make(chan string, 8)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { ran <- j.Key; return nil }), TypeConfig{})
	runPool(t, p)
	for _, k := range []string{"a", "b", "c"} {
		mustEnqueue(t, q, NewJob{Type: "t", Key: k})
		waitFor(t, ran)
	}
	eventually(t, "results recorded", func() bool { s, _ := q.Stats(context.Background()); return s.Total[StateDone] == 3 })
	before := p.rounds.Load()
	time.Sleep(200 * time.Millisecond) // an observation window, not a sync point
	if n := p.rounds.Load() - before; n > 4 {
		t.Errorf("idle loop ran %d times in 200ms after its own commits", n)
	}
}

// TestOwnCommitsDoNotWakeThePool: a commit of this process (here a row
// written on the queue's writer, as the pool's record is every 30 s)
// writes the WAL and changes the watch connection's data_version, but
// the writer connection's does not change: the loop stays asleep. A job
// from another connection afterwards still wakes it.
func TestOwnCommitsDoNotWakeThePool(t *testing.T) {
	t.Parallel()
	skipWithoutFileWatch(t)
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "q.db")
	q, err := openSQLite(context.Background(), path, sqlite.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	p := newTestPool(t, q, PoolConfig{MaxIdle: time.Hour, WatchInterval: time.Hour, MaintenanceEvery: -1})
	ran := make(chan string, 4)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { ran <- j.Key; return nil }), TypeConfig{})
	runPool(t, p)
	clk.BlockUntil(3)
	ctx := context.Background()
	// Past the wakes of the pool's own first commit.
	time.Sleep(100 * time.Millisecond) // an observation window, not a sync point
	before := p.rounds.Load()
	for i := range 5 {
		if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "someone", Now: clk.Now().Add(time.Duration(i) * time.Millisecond),
			Presence: &store.Presence{Types: []string{"x"}, Process: Process{PID: 1, Host: "host", Version: "v"}}}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // an observation window, not a sync point
	if n := p.rounds.Load() - before; n > 0 {
		t.Errorf("the loop woke %d times for this process's own commits", n)
	}
	other, err := openSQLite(ctx, path, sqlite.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mustEnqueue(t, other, NewJob{Type: "t", Key: "other"})
	if k := stepUntil(t, clk, ran); k != "other" {
		t.Errorf("ran %q, want other", k)
	}
}
