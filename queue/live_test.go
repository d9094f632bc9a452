package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestPoolStoresLiveOutput: what a handler writes to OutputWriter is stored,
// redacted, once the job has run LiveOutputEvery and then at most every
// LiveOutputEvery while it changes, in one statement for the pool's running
// jobs; the result deletes it in its transaction and it becomes the
// attempt's output. A job that ends before its first store, or writes
// nothing, costs no write of live output.
func TestPoolStoresLiveOutput(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			inner, clk := newEngineQueue(t, engine)
			log := &txLog{Engine: inner.Engine()}
			q := mustNew(t, log)
			ctx := context.Background()
			p := newTestPool(t, q, PoolConfig{MaintenanceEvery: -1})
			step := make(chan string)
			wrote := make(chan string, 4)
			p.Register("long", HandlerFunc(func(ctx context.Context, j *Job) error {
				w := OutputWriter(ctx)
				for line := range step {
					fmt.Fprintln(w, line)
					wrote <- line
				}
				return nil
			}), TypeConfig{RedactFunc: func(j *Job, s string) string { return strings.ReplaceAll(s, "s3cr3t", "[redacted]") }})
			p.Register("short", HandlerFunc(func(ctx context.Context, j *Job) error {
				io.WriteString(OutputWriter(ctx), "quick\n")
				return nil
			}), TypeConfig{})
			p.Register("silent", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
			runPool(t, p)

			id := mustEnqueue(t, q, NewJob{Type: "long", Key: "long"}).ID
			step <- "one s3cr3t"
			waitFor(t, wrote)
			for _, k := range []string{"short", "silent"} {
				mustEnqueue(t, q, NewJob{Type: k, Key: k})
				eventually(t, k+" done", func() bool { return mustJob(t, q, k).State == StateDone })
			}
			live := func() string {
				l, err := q.LiveOutput(ctx, id)
				if errors.Is(err, ErrNotFound) {
					return "(none)"
				}
				if err != nil {
					t.Fatal(err)
				}
				return l.Output
			}
			waitFor(t, p.Probe())
			if got := live(); got != "(none)" {
				t.Errorf("live output before the job ran %s: %q, want none", LiveOutputEvery, got)
			}
			clk.Advance(LiveOutputEvery)
			eventually(t, "the first line stored", func() bool { return live() == "one [redacted]\n" })

			step <- "two"
			waitFor(t, wrote)
			waitFor(t, p.Probe())
			if got := live(); got != "one [redacted]\n" {
				t.Errorf("live output %q before %s passed again, want the first line alone", got, LiveOutputEvery)
			}
			clk.Advance(LiveOutputEvery)
			eventually(t, "the second line stored", func() bool { return live() == "one [redacted]\ntwo\n" })

			close(step)
			eventually(t, "long done", func() bool { return mustJob(t, q, "long").State == StateDone })
			if got := live(); got != "(none)" {
				t.Errorf("live output of a done job: %q, want none", got)
			}
			as, err := q.Attempts(ctx, id)
			if err != nil || len(as) != 1 || as[0].Output != "one [redacted]\ntwo\n" {
				t.Errorf("attempts = %+v, %v; want one with the written output, redacted", as, err)
			}
			checkLiveWrites(t, log, id)
		})
	}
}

// checkLiveWrites fails t unless the transactions in log stored live output
// of job id alone, two of them, one job each, and deleted it with its
// result.
func checkLiveWrites(t *testing.T, log *txLog, id int64) {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	var stores, ends int
	for _, tx := range log.txs {
		for _, l := range tx.Live {
			if l.JobID != id {
				t.Errorf("live output of job %d stored: it ended before %s or wrote nothing", l.JobID, LiveOutputEvery)
			}
		}
		if len(tx.Live) > 0 {
			stores++
		}
		for _, e := range tx.LiveEnded {
			if e.JobID != id || !slicesHasResult(tx.Results, id) {
				t.Errorf("live output of job %d deleted outside its result's transaction", e.JobID)
			}
			ends++
		}
	}
	if stores != 2 || ends != 1 {
		t.Errorf("%d transactions stored live output and %d deleted it, want 2 and 1", stores, ends)
	}
}

func slicesHasResult(rs []store.Result, id int64) bool {
	for _, r := range rs {
		if r.Job.ID == id {
			return true
		}
	}
	return false
}

// TestOutputWriterOutsideAPool: outside a handler OutputWriter discards.
func TestOutputWriterOutsideAPool(t *testing.T) {
	if w := OutputWriter(context.Background()); w != io.Discard {
		t.Errorf("OutputWriter outside a pool = %T, want io.Discard", w)
	}
}

// TestAppendTailKeepsTheTail: appendTail keeps the last bytes written
// whatever the sizes of the writes.
func TestAppendTailKeepsTheTail(t *testing.T) {
	t.Parallel()
	var all, buf []byte
	for i := range 200 {
		b := []byte(strings.Repeat(string(rune('a'+i%26)), i*7%50+1))
		all = append(all, b...)
		buf = appendTail(buf, b, 64)
		want := all[max(len(all)-64, 0):]
		if got := buf[max(len(buf)-64, 0):]; string(got) != string(want) {
			t.Fatalf("after %d writes: tail %q, want %q", i+1, got, want)
		}
		if len(buf) > 128 {
			t.Fatalf("after %d writes: %d bytes kept, want at most 128", i+1, len(buf))
		}
	}
	if buf = appendTail(buf, []byte(strings.Repeat("z", 100)), 64); string(buf) != strings.Repeat("z", 64) {
		t.Errorf("a write longer than the bound: %q, want its last 64 bytes", buf)
	}
}
