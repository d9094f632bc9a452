package schedule

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// TestRacingBeatsMaterialiseEachInstantOnce: two beats, each on its own
// connections to one file as two daemons would be, run their passes at
// once over 1,000 schedules due every minute. Each instant of each
// schedule is committed by exactly one of them: inside a batch, every
// schedule keeps its own compare-and-set of the cursor, and the loser of a
// schedule reads it again and finds nothing left to do.
func TestRacingBeatsMaterialiseEachInstantOnce(t *testing.T) {
	t.Parallel()
	const n, minutes = 1000, 4
	var sb strings.Builder
	sb.WriteString("[tasks.t]\ncommand = [\"true\"]\n")
	for i := range n {
		fmt.Fprintf(&sb, "[[schedule]]\nname = \"s%04d\"\ncron = \"* * * * *\"\ntask = \"t\"\n", i)
	}
	cfg := mustParse(t, sb.String())
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(t0)
	var logs [2]syncBuffer
	var beats [2]*Beat
	var q *queue.Client
	for i := range beats {
		q = openQueue(t, path, clk)
		log := slog.New(slog.NewJSONHandler(&logs[i], &slog.HandlerOptions{Level: slog.LevelDebug}))
		b, err := NewBeat(q, cfg, BeatConfig{Clock: clk, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		beats[i] = b
	}
	ctx := context.Background()
	if _, err := beats[0].pass(ctx, clk.Now()); err != nil { // creates the cursors
		t.Fatal(err)
	}
	for range minutes {
		clk.Advance(time.Minute)
		now := clk.Now()
		errs := make(chan error, len(beats))
		for _, b := range beats {
			go func() {
				_, err := b.pass(ctx, now)
				errs <- err
			}()
		}
		for range beats {
			if err := waitFor(t, errs); err != nil {
				t.Fatalf("pass: %v", err)
			}
		}
	}

	committed := map[string]int{} // "schedule@cursor" -> commits, by either beat
	for i := range logs {
		sc := bufio.NewScanner(strings.NewReader(logs[i].String()))
		for sc.Scan() {
			var rec struct {
				Msg      string    `json:"msg"`
				Schedule string    `json:"schedule"`
				Cursor   time.Time `json:"cursor"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("log line %q: %v", sc.Text(), err)
			}
			if rec.Msg == "instants materialised" {
				committed[rec.Schedule+"@"+rec.Cursor.UTC().Format(time.TimeOnly)]++
			}
		}
	}
	for i := range n {
		for m := 1; m <= minutes; m++ {
			key := fmt.Sprintf("s%04d@%s", i, t0.Add(time.Duration(m)*time.Minute).Format(time.TimeOnly))
			if got := committed[key]; got != 1 {
				t.Errorf("instant %s committed %d times, want once", key, got)
			}
		}
	}
	if len(committed) != n*minutes {
		t.Errorf("%d instants committed, want %d", len(committed), n*minutes)
	}
	stats, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := stats.Total[queue.StatePending]; got != n*minutes {
		t.Errorf("%d pending jobs, want %d", got, n*minutes)
	}
}
