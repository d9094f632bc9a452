package config

import "testing"

func TestRecoverDB(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
		ok              bool
	}{
		{"basic", "[scheduler]\ndb = \"/var/lib/s/q.db\"\ntimezone = \"Europe/Pariss\"\n", "/var/lib/s/q.db", true},
		{"literal with comment", "[scheduler]\n  db = 'data\\q.db' # the queue\n", `data\q.db`, true},
		{"escapes", "[scheduler]\ndb = \"a\\\"b.db\"\n", `a"b.db`, true},
		{"dotted at the top", "scheduler.db = \"q.db\"\n[tasks.x]\ncommand = [\n", "q.db", true},
		{"syntax error elsewhere", "[tasks.x]\ncommand = true false\ncron = 0 3 * * *\n\n[scheduler]\ndb = \"q.db\"\n", "q.db", true},
		{"other table", "[http]\ndb = \"q.db\"\n", "", false},
		{"inside a multi-line string", "x = \"\"\"\n[scheduler]\ndb = \"q.db\"\n\"\"\"\n", "", false},
		{"not a string", "[scheduler]\ndb = 3\n", "", false},
		{"unterminated", "[scheduler]\ndb = \"q.db\n", "", false},
		{"trailing garbage", "[scheduler]\ndb = \"q.db\" x\n", "", false},
		{"empty", "[scheduler]\ndb = \"\"\n", "", false},
		{"none", "[scheduler]\nworkers = 2\n", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := RecoverDB([]byte(tc.src))
			if got != tc.want || ok != tc.ok {
				t.Errorf("RecoverDB(%q) = %q, %v; want %q, %v", tc.src, got, ok, tc.want, tc.ok)
			}
		})
	}
}
