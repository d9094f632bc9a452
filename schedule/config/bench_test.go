package config

import (
	"fmt"
	"strings"
	"testing"
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
