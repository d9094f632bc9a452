package main

import "testing"

func TestPostgresTicks(t *testing.T) {
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
			key, ticks, ok := postgresTicks([]byte(tt.stat))
			if key != tt.key || ticks != tt.ticks || ok != tt.postgres {
				t.Errorf("postgresTicks(%q) = %v, %d, %v, want %v, %d, %v", tt.stat, key, ticks, ok, tt.key, tt.ticks, tt.postgres)
			}
		})
	}
}

func TestBackendDatabase(t *testing.T) {
	tests := []struct {
		name    string
		cmdline string
		db      string
		backend bool
	}{
		{"tcp backend", "postgres: 15/main: postgres peerbench_1_2 127.0.0.1(45678) idle", "peerbench_1_2", true},
		{"socket backend", "postgres: 15/main: scheduler test [local] UPDATE", "test", true},
		{"no cluster name", "postgres: postgres test 127.0.0.1(1) idle in transaction (aborted)", "test", true},
		{"walwriter", "postgres: 15/main: walwriter ", "", false},
		{"postmaster", "/usr/lib/postgresql/15/bin/postgres\x00-D\x00/var/lib/postgresql/15/main\x00", "", false},
		{"parallel worker", "postgres: 15/main: parallel worker for PID 4242", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, backend := backendDatabase([]byte(tt.cmdline))
			if db != tt.db || backend != tt.backend {
				t.Errorf("backendDatabase(%q) = %q, %v, want %q, %v", tt.cmdline, db, backend, tt.db, tt.backend)
			}
		})
	}
}
