// Package pgproc reads the CPU time a PostgreSQL server running on this host
// spends, from /proc, so that a benchmark can count the server's CPU beside
// its own. It knows nothing of the queue; it reads only Linux's /proc.
package pgproc

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ),
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// Process is one server process at the moment of a Snapshot.
type Process struct {
	PID   int
	Ticks int64 // user+system CPU time, in 1/100 s
	// Database is the database a client's backend serves; "" for the
	// postmaster and the background processes (WAL writer, checkpointer,
	// background writer, autovacuum), which work for every database.
	Database string
}

// Snapshot holds the server's processes at one moment, keyed by pid and
// start time, so that a reused pid is another process.
type Snapshot map[[2]int64]Process

// Read returns the processes on this host whose command name is "postgres",
// or nil where there is no /proc.
func Read() Snapshot {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	s := Snapshot{}
	for _, e := range dir {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		key, ticks, ok := parseStat(stat)
		if !ok {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		s[key] = Process{PID: int(key[0]), Ticks: ticks, Database: backendDatabase(cmd)}
	}
	return s
}

// CPU returns the CPU time the background processes, and the backends that
// count reports true for, spent between s0 and s1: a process started in
// between counts from its start; one that exited in between adds nothing.
// It returns -1 if either snapshot is nil.
func CPU(s0, s1 Snapshot, count func(p Process) bool) time.Duration {
	if s0 == nil || s1 == nil {
		return -1
	}
	var ticks int64
	for k, p := range s1 {
		if p.Database == "" || count(p) {
			ticks += p.Ticks - s0[k].Ticks
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// parseStat returns the pid and start time, and utime+stime, of a
// /proc/PID/stat line whose comm is "postgres". The comm sits in parentheses
// and may hold spaces, so the fields are counted from the last ')'.
func parseStat(stat []byte) (key [2]int64, ticks int64, ok bool) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 1 || end < open || string(stat[open+1:end]) != "postgres" {
		return key, 0, false
	}
	pid, err := strconv.ParseInt(string(bytes.TrimSpace(stat[:open])), 10, 64)
	f := bytes.Fields(stat[end+1:]) // f[0] is field 3 (state); utime is 14, stime 15, starttime 22
	if err != nil || len(f) < 20 {
		return key, 0, false
	}
	var n [3]int64
	for i, field := range [3]int{11, 12, 19} {
		if n[i], err = strconv.ParseInt(string(f[field]), 10, 64); err != nil {
			return key, 0, false
		}
	}
	return [2]int64{pid, n[2]}, n[0] + n[1], true
}

// backendDatabase reads a server process's title (its cmdline: "postgres:
// [cluster:] user database host(port) activity" for a client's backend) and
// returns the database of a backend, the field before the client's address,
// or "" for any other process.
func backendDatabase(cmdline []byte) string {
	f := bytes.Fields(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	for i := 2; i < len(f); i++ {
		if bytes.Equal(f[i], []byte("[local]")) || bytes.HasSuffix(f[i], []byte(")")) && bytes.Contains(f[i], []byte("(")) {
			return string(f[i-1])
		}
	}
	return ""
}
