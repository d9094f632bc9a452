// Package bigconfig writes a schedules.toml of many realistic schedules,
// for the loader's and the beat's memory and time benchmarks.
package bigconfig

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Tasks is the number of tasks a file defines.
const Tasks = 20

var (
	crons = []string{"0 3 * * *", "*/5 * * * *", "30 2 * * 1-5", "@hourly", "0 */6 * * *", "15 4 1 * *", "@every 10m", "0 9-17 * * mon-fri"}
	zones = []string{"", "Europe/Istanbul", "America/New_York", "Asia/Tokyo", "UTC", "Europe/Berlin"}
)

// Write writes a file of n schedules over Tasks command tasks: a few cron
// expressions and zones shared between schedules, a payload each, and a
// three-item fan-out every 50th.
func Write(w io.Writer, n int) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("[scheduler]\ntimezone = \"UTC\"\n")
	for t := range Tasks {
		fmt.Fprintf(bw, "\n[tasks.task%02d]\ncommand = [\"/bin/echo\", \"--customer\", \"{{.customer}}\"]\ntimeout = \"5m\"\nmax_attempts = 3\n", t)
	}
	for i := range n {
		fmt.Fprintf(bw, "\n[[schedule]]\nname = \"customer-%06d-report\"\ncron = %q\n", i, crons[i%len(crons)])
		if z := zones[i%len(zones)]; z != "" {
			fmt.Fprintf(bw, "timezone = %q\n", z)
		}
		fmt.Fprintf(bw, "task = \"task%02d\"\n", i%Tasks)
		if i%50 == 0 {
			fmt.Fprintf(bw, "payload = { format = \"pdf\" }\nfor_each = [ { customer = \"a%d\" }, { customer = \"b%d\" }, { customer = \"c%d\" } ]\n", i, i, i)
		} else {
			fmt.Fprintf(bw, "payload = { customer = \"c%06d\", format = \"pdf\" }\n", i)
		}
		if i%7 == 0 {
			bw.WriteString("overlap = \"skip\"\ncatch_up = \"none\"\n")
		}
	}
	return bw.Flush()
}

// String returns the file Write writes.
func String(n int) string {
	var sb strings.Builder
	Write(&sb, n) // a strings.Builder does not fail
	return sb.String()
}
