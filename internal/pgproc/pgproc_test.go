package pgproc

import "testing"

func TestParseStat(t *testing.T) {
	tests := []struct {
		name     string
		stat     string
		key      [2]int64
		ticks    int64
		postgres bool
	}{
		{"backend", "4242 (postgres) S 2238 2238 2238 0 -1 4194560 1271 0 0 0 37 12 0 0 20 0 1 0 98765 226549760 3405 18446744073709551615",
			[2]int64{4242, 98765}, 49, true},
		{"other command", "17 (go test) R 1 17 17 0 -1 4194560 1271 0 0 0 37 12 0 0 20 0 1 0 98765 226549760 3405", [2]int64{}, 0, false},
		{"comm with a parenthesis", "18 (postgres) x) R 1 17 17 0 -1 4194560 1271 0 0 0 37 12 0 0 20 0 1 0 98765 226549760", [2]int64{}, 0, false},
		{"short", "19 (postgres) S 1 2", [2]int64{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ticks, ok := parseStat([]byte(tt.stat))
			if key != tt.key || ticks != tt.ticks || ok != tt.postgres {
				t.Errorf("parseStat(%q) = %v, %d, %v, want %v, %d, %v", tt.stat, key, ticks, ok, tt.key, tt.ticks, tt.postgres)
			}
		})
	}
}

func TestBackendDatabase(t *testing.T) {
	tests := []struct {
		name    string
		cmdline string
		db      string
	}{
		{"tcp backend", "postgres: 15/main: postgres peerbench_1_2 127.0.0.1(45678) idle", "peerbench_1_2"},
		{"socket backend", "postgres: 15/main: scheduler test [local] UPDATE", "test"},
		{"no cluster name", "postgres: postgres test 127.0.0.1(1) idle in transaction (aborted)", "test"},
		{"walwriter", "postgres: 15/main: walwriter ", ""},
		{"postmaster", "/usr/lib/postgresql/15/bin/postgres\x00-D\x00/var/lib/postgresql/15/main\x00", ""},
		{"parallel worker", "postgres: 15/main: parallel worker for PID 4242", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if db := backendDatabase([]byte(tt.cmdline)); db != tt.db {
				t.Errorf("backendDatabase(%q) = %q, want %q", tt.cmdline, db, tt.db)
			}
		})
	}
}

func TestCPU(t *testing.T) {
	s0 := Snapshot{
		{1, 10}: {PID: 1, Ticks: 100},                    // background, runs on
		{2, 10}: {PID: 2, Ticks: 50, Database: "mine"},   // counted backend
		{3, 10}: {PID: 3, Ticks: 70, Database: "theirs"}, // not counted
		{4, 10}: {PID: 4, Ticks: 500, Database: "mine"},  // exits, its pid reused
	}
	s1 := Snapshot{
		{1, 10}: {PID: 1, Ticks: 103},
		{2, 10}: {PID: 2, Ticks: 60, Database: "mine"},
		{3, 10}: {PID: 3, Ticks: 90, Database: "theirs"},
		{5, 20}: {PID: 5, Ticks: 7, Database: "mine"}, // started since
		{4, 40}: {PID: 4, Ticks: 1, Database: "mine"}, // pid 4 again, another process: from its start
	}
	got := CPU(s0, s1, func(p Process) bool { return p.Database == "mine" })
	if want := int64(3+10+7+1) * 10; got.Milliseconds() != want {
		t.Errorf("CPU = %v, want %d ms", got, want)
	}
	if got := CPU(nil, s1, func(Process) bool { return true }); got != -1 {
		t.Errorf("CPU(nil, ...) = %v, want -1", got)
	}
}
