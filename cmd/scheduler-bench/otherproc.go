package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// cfgOtherProc, on PostgreSQL, enqueues from another process: this program
// run again with -produce, with a store of its own, as a node on another
// host, or the CLI's -trigger, would. The pool hears of each job only by
// LISTEN/NOTIFY. The producer reports when it enqueued each job by the
// wall clock, which both processes read on this one host.
const cfgOtherProc = "otherproc"

// produceEnv marks the environment of a producer process, for a test
// binary that runs this program as its child (see TestMain).
const produceEnv = "SCHEDULER_BENCH_PRODUCE"

// produce is the producer process of cfgOtherProc: it enqueues jobs
// 0..latjobs-1 one every latevery into the queue at -dsn (which names the
// run's schema), then prints "seq unix_ns" for each, the wall clock just
// before its Enqueue. Printing after the last enqueue keeps the pipe out of
// the measured path.
func produce(ctx context.Context, o options, stdout io.Writer) (err error) {
	q, err := openQueue(ctx, o.dsn, queueConfig(nil))
	if err != nil {
		return err
	}
	defer closeQueue(q, &err)
	at := make([]int64, o.latJobs)
	t0 := time.Now()
	errs := 0
	for i := range at {
		if d := time.Until(t0.Add(time.Duration(i) * o.latEvery)); d > 0 {
			if err := sleepCtx(ctx, d); err != nil {
				return err
			}
		}
		at[i] = time.Now().UnixNano()
		for {
			_, err := q.Enqueue(ctx, newJob(i))
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errs++; errs > maxEnqueueErrs {
				return fmt.Errorf("enqueue: too many errors, last: %w", err)
			}
		}
	}
	w := bufio.NewWriter(stdout)
	for i, ns := range at {
		fmt.Fprintf(w, "%d %d\n", i, ns)
	}
	fmt.Fprintf(w, "errs %d\n", errs)
	return w.Flush()
}

// produceElsewhere runs the producer process of cfgOtherProc against db
// and returns once it has enqueued every job; finish, called after the
// jobs ran, reads when it enqueued each into rec and returns the
// producer's count of failed enqueues.
func (b *bench) produceElsewhere(ctx context.Context, db string, rec *recorder) (finish func() (int, error), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "-produce", "-dsn", db,
		"-latjobs", strconv.Itoa(b.o.latJobs), "-latevery", b.o.latEvery.String())
	cmd.Env = append(os.Environ(), produceEnv+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("producer: %w: %s", err, strings.TrimSpace(errOut.String()))
	}
	return func() (int, error) {
		errs := 0
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			a, v, _ := strings.Cut(line, " ")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("producer: line %q", line)
			}
			if a == "errs" {
				errs = int(n)
				continue
			}
			seq, err := strconv.Atoi(a)
			if err != nil {
				return 0, fmt.Errorf("producer: line %q", line)
			}
			rec.enqueuedElsewhere(seq, n)
		}
		return errs, nil
	}, nil
}
