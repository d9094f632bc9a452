package chaos

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// event is one line of the record file written by testdata/recorder.
type event struct {
	kind        string // "start" or "end"
	key         string
	attempt     int
	jobID       int64
	scheduledAt string // RFC 3339 UTC, or "-"
	start       time.Time
	end         time.Time // end lines only
	pid, pgid   int       // start lines only
	exit        int       // end lines only
}

// readRecord parses the record file; a missing file is an empty record.
func readRecord(t testing.TB, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []event
	text := string(data)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i] // a line is complete only with its newline
	} else {
		return nil
	}
	for n, line := range strings.Split(text, "\n") {
		e, err := parseEvent(line)
		if err != nil {
			t.Fatalf("record %s line %d %q: %v", path, n+1, line, err)
		}
		out = append(out, e)
	}
	return out
}

func parseEvent(line string) (event, error) {
	f := strings.Split(line, "\t")
	var e event
	if len(f) != 8 || (f[0] != "start" && f[0] != "end") {
		return e, fmt.Errorf("want 8 tab-separated fields starting with start or end")
	}
	e.kind, e.key, e.scheduledAt = f[0], f[1], f[4]
	var err error
	if e.attempt, err = strconv.Atoi(f[2]); err != nil {
		return e, err
	}
	if e.jobID, err = strconv.ParseInt(f[3], 10, 64); err != nil {
		return e, err
	}
	ns, err := strconv.ParseInt(f[5], 10, 64)
	if err != nil {
		return e, err
	}
	e.start = time.Unix(0, ns)
	if e.kind == "start" {
		if e.pid, err = strconv.Atoi(f[6]); err != nil {
			return e, err
		}
		e.pgid, err = strconv.Atoi(f[7])
		return e, err
	}
	ns, err = strconv.ParseInt(f[6], 10, 64)
	if err != nil {
		return e, err
	}
	e.end = time.Unix(0, ns)
	e.exit, err = strconv.Atoi(f[7])
	return e, err
}

// runs is what the record says of one key: its attempts' start and end
// lines by attempt number.
type runs struct {
	key    string
	starts map[int][]event
	ends   map[int][]event
}

// byKey groups a record by key.
func byKey(events []event) map[string]*runs {
	out := map[string]*runs{}
	for _, e := range events {
		r := out[e.key]
		if r == nil {
			r = &runs{key: e.key, starts: map[int][]event{}, ends: map[int][]event{}}
			out[e.key] = r
		}
		if e.kind == "start" {
			r.starts[e.attempt] = append(r.starts[e.attempt], e)
		} else {
			r.ends[e.attempt] = append(r.ends[e.attempt], e)
		}
	}
	return out
}

// executions is how many times the command started for the key.
func (r *runs) executions() int {
	n := 0
	for _, s := range r.starts {
		n += len(s)
	}
	return n
}

// executionsOrZero is executions, or 0 for a key that never ran.
func (r *runs) executionsOrZero() int {
	if r == nil {
		return 0
	}
	return r.executions()
}

// succeeded reports whether attempt ran to the end with exit 0.
func (r *runs) succeeded(attempt int) bool {
	for _, e := range r.ends[attempt] {
		if e.exit == 0 {
			return true
		}
	}
	return false
}

// attempts returns the attempt numbers that started, in order.
func (r *runs) attempts() []int {
	var out []int
	for a := range r.starts {
		out = append(out, a)
	}
	sort.Ints(out)
	return out
}

// waitRecord polls the record until cond holds for it and returns it.
func waitRecord(t testing.TB, path, what string, cond func([]event) bool) []event {
	t.Helper()
	var evs []event
	eventually(t, what, func() bool {
		evs = readRecord(t, path)
		return cond(evs)
	})
	return evs
}

// countKind counts the lines of kind whose key has prefix.
func countKind(events []event, kind, prefix string) int {
	n := 0
	for _, e := range events {
		if e.kind == kind && strings.HasPrefix(e.key, prefix) {
			n++
		}
	}
	return n
}

// waitRecordersGone waits until every process that started a record line
// has exited: a SIGKILLed daemon's commands die with it, a moment later.
func waitRecordersGone(t testing.TB, path string) {
	t.Helper()
	eventually(t, "recorder processes to exit", func() bool {
		for _, e := range readRecord(t, path) {
			if e.kind == "start" && processAlive(e.pid) && isRecorder(e.pid) {
				return false
			}
		}
		return true
	})
}

// isRecorder reports whether pid runs the recorder (and is not a reused
// pid).
func isRecorder(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && exe == recorder
}
