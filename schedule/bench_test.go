package schedule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchmarkPass measures one beat pass per minute of fake time, each
// materialising rowsPerPass jobs, and reports jobs written per second.
func benchmarkPass(b *testing.B, file string, rowsPerPass int) {
	cfg := mustParse(b, file)
	q, clk := newTestQueue(b)
	beat, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := beat.pass(ctx, clk.Now()); err != nil { // creates the cursors
		b.Fatal(err)
	}
	rows := 0
	for b.Loop() {
		clk.Advance(time.Minute)
		if _, err := beat.pass(ctx, clk.Now()); err != nil {
			b.Fatal(err)
		}
		rows += rowsPerPass
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkBeat10000Schedules: 10,000 schedules due at the same minute, one
// Advance (transaction) each.
func BenchmarkBeat10000Schedules(b *testing.B) {
	const n = 10000
	var sb strings.Builder
	sb.WriteString("[tasks.t]\n")
	for i := range n {
		fmt.Fprintf(&sb, "[[schedule]]\nname = \"s%05d\"\ncron = \"* * * * *\"\ntask = \"t\"\n", i)
	}
	benchmarkPass(b, sb.String(), n)
}

// BenchmarkBeatFanOut100000: one schedule fanned out to 100,000 items, one
// Advance per minute.
func BenchmarkBeatFanOut100000(b *testing.B) {
	const n = 100000
	var sb strings.Builder
	sb.WriteString("[tasks.t]\n[[schedule]]\nname = \"s\"\ncron = \"* * * * *\"\ntask = \"t\"\npayload = { format = \"pdf\" }\nfor_each = [\n")
	for i := range n {
		fmt.Fprintf(&sb, "{ customer = \"c%06d\" },\n", i)
	}
	sb.WriteString("]\n")
	benchmarkPass(b, sb.String(), n)
}

// BenchmarkSpecNext measures the DST-aware next-instant computation.
func BenchmarkSpecNext(b *testing.B) {
	for _, expr := range []string{"*/15 * * * *", "30 2 * * *", "0 0 29 2 *"} {
		b.Run(expr, func(b *testing.B) {
			s := mustSpec(b, expr, "America/New_York")
			at := t0
			for b.Loop() {
				at = s.Next(at)
				if at.Year() > 2400 {
					at = t0
				}
			}
		})
	}
}

// BenchmarkParseBrokenConfig20000 parses a 1.3 MB file of 20,000 schedules,
// each with a bad cron expression. The loader stops after MaxConfigErrors
// problems and must not spend time proportional to the file's size for each
// error: -check and a SIGHUP reload of such a file stay within a second.
func BenchmarkParseBrokenConfig20000(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[tasks.t]\ncommand = [\"true\"]\n")
	for i := range 20000 {
		fmt.Fprintf(&sb, "\n[[schedule]]\nname = \"s%d\"\ncron = \"61 * * * *\"\ntask = \"t\"\n", i)
	}
	data := []byte(sb.String())
	for b.Loop() {
		if _, err := Parse("huge.toml", data); err == nil {
			b.Fatal("a file of bad cron expressions parsed")
		}
	}
	b.ReportMetric(float64(len(data))/1024, "KB")
}
