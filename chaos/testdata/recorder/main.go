// Command recorder is the job the chaos suite's schedules run. It appends a
// "start" line to a record file when it begins and an "end" line when it
// finishes, each with one write to a file opened O_APPEND and fsynced before
// going on, so that the record outlives a SIGKILL of the daemon (which
// kills a recorder then running: its start line stays, without an end).
//
// Lines are tab-separated:
//
//	start KEY ATTEMPT JOB_ID SCHEDULED_AT START_NS PID PGID
//	end   KEY ATTEMPT JOB_ID SCHEDULED_AT START_NS END_NS EXIT
//
// SCHEDULED_AT is "-" when the job stands for no instant.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	file := flag.String("file", "", "the record `file` (appended to)")
	sleep := flag.Duration("sleep", 0, "run this long")
	sleepMax := flag.String("sleep-max", "", "run a random duration in [0, this) (a Go duration)")
	sleeps := flag.String("sleep-by-attempt", "", "comma-separated durations: attempt n runs the n-th (the last one for later attempts)")
	exit := flag.Int("exit", 0, "exit with this code")
	exitUnless := flag.String("exit-unless", "", "with -exit: exit 0 instead when this `file` exists")
	flag.Parse()
	if *file == "" {
		fmt.Fprintln(os.Stderr, "recorder: -file is required")
		os.Exit(2)
	}
	key := os.Getenv("SCHEDULER_KEY")
	attempt := os.Getenv("SCHEDULER_ATTEMPT")
	id := os.Getenv("SCHEDULER_JOB_ID")
	at := os.Getenv("SCHEDULER_SCHEDULED_AT")
	if at == "" {
		at = "-"
	}
	start := time.Now()
	pgid, _ := syscall.Getpgid(0)
	appendLine(*file, "start", key, attempt, id, at, strconv.FormatInt(start.UnixNano(), 10),
		strconv.Itoa(os.Getpid()), strconv.Itoa(pgid))

	d := *sleep
	if *sleepMax != "" {
		if m, err := time.ParseDuration(*sleepMax); err == nil && m > 0 {
			d = rand.N(m)
		}
	}
	if *sleeps != "" {
		list := strings.Split(*sleeps, ",")
		n, _ := strconv.Atoi(attempt)
		i := min(max(n, 1), len(list)) - 1
		if v, err := time.ParseDuration(list[i]); err == nil {
			d = v
		}
	}
	time.Sleep(d)

	code := *exit
	if *exitUnless != "" {
		if _, err := os.Stat(*exitUnless); err == nil {
			code = 0
		}
	}
	appendLine(*file, "end", key, attempt, id, at, strconv.FormatInt(start.UnixNano(), 10),
		strconv.FormatInt(time.Now().UnixNano(), 10), strconv.Itoa(code))
	if code != 0 {
		fmt.Printf("recorder: failing attempt %s with exit code %d\n", attempt, code)
	}
	os.Exit(code)
}

// appendLine writes one line in one write and fsyncs it.
func appendLine(path string, fields ...string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(111)
	}
	if _, err := f.WriteString(strings.Join(fields, "\t") + "\n"); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(111)
	}
	if err := f.Sync(); err != nil {
		fmt.Fprintln(os.Stderr, "recorder:", err)
		os.Exit(111)
	}
	f.Close()
}
