package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/schedule/internal/bigconfig"
)

// BenchmarkParseBrokenConfig20000 parses a 1.3 MB file of 20,000 schedules,
// each with a bad cron expression. The loader stops after MaxErrors
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

// BenchmarkLoad100000Schedules parses a realistic file of 100,000
// schedules (see bigconfig) and reports the live heap the Config holds
// after a collection, per schedule.
func BenchmarkLoad100000Schedules(b *testing.B) {
	const n = 100000
	data := []byte(bigconfig.String(n))
	for b.Loop() {
		if _, err := Parse("big.toml", data); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	before := liveHeap()
	cfg, err := Parse("big.toml", data)
	if err != nil {
		b.Fatal(err)
	}
	after := liveHeap()
	runtime.KeepAlive(cfg)
	runtime.KeepAlive(data) // else its bytes, freed, count against the Config
	b.ReportMetric(float64(after-before)/n, "bytes/schedule")
	b.ReportMetric(float64(len(data))/(1<<20), "MB")
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
