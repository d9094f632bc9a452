package main

import (
	"bytes"
	"os"
	"strconv"
)

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ),
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// serverCPU holds the CPU ticks of a PostgreSQL server's processes on this
// host at one moment, by process (pid and start time, so that a reused pid
// is another process).
type serverCPU map[[2]int64]int64

// readServerCPU reads the user+system CPU ticks of the processes on this
// host whose command name is "postgres" and that either serve database db
// (backends) or none (the postmaster, the WAL writer, the checkpointer and
// other background processes, which work for every database). It returns nil
// where there is no /proc.
func readServerCPU(db string) serverCPU {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	s := serverCPU{}
	for _, e := range dir {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		key, ticks, ok := postgresTicks(stat)
		if !ok {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if d, backend := backendDatabase(cmd); backend && d != db {
			continue
		}
		s[key] = ticks
	}
	return s
}

// since returns the CPU seconds the processes of s0 and those started since
// spent between s0 and now (a process that exited in between adds nothing),
// or -1 if s0 was not read.
func (s0 serverCPU) since(db string) float64 {
	s1 := readServerCPU(db)
	if s0 == nil || s1 == nil {
		return -1
	}
	var ticks int64
	for k, t := range s1 {
		ticks += t - s0[k]
	}
	return float64(ticks) / clockTicks
}

// postgresTicks returns the pid and start time, and utime+stime, of a
// /proc/PID/stat line whose comm is "postgres". The comm sits in parentheses
// and may hold spaces, so the fields are counted from the last ')'.
func postgresTicks(stat []byte) (key [2]int64, ticks int64, ok bool) {
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

// backendDatabase reads a server process's title (its cmdline, "postgres:
// [cluster:] user database host(port) activity" for a backend) and returns the
// database of a client's backend, the field before the client's address.
func backendDatabase(cmdline []byte) (db string, backend bool) {
	f := bytes.Fields(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	for i := 2; i < len(f); i++ {
		if bytes.Equal(f[i], []byte("[local]")) || bytes.HasSuffix(f[i], []byte(")")) && bytes.Contains(f[i], []byte("(")) {
			return string(f[i-1]), true
		}
	}
	return "", false
}
