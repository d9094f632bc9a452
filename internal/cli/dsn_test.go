package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/schedule/config"
)

func TestIsDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		db   string
		want bool
	}{
		{"postgres://u:p@h/db", true},
		{"postgresql://h/db", true},
		{"POSTGRES://h/db", true},
		{"postgres:///db?host=/run/postgresql", true},
		{"scheduler.db", false},
		{"/var/lib/scheduler/scheduler.db", false},
		{"./postgres://x", false},
		{"postgres:/x", false},
		{"postgres", false},
		{"host=127.0.0.1 dbname=scheduler", false}, // libpq's keyword form is not accepted
		{"", false},
	}
	for _, tt := range tests {
		if got := isDSN(tt.db); got != tt.want {
			t.Errorf("isDSN(%q) = %v, want %v", tt.db, got, tt.want)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, db, want string
	}{
		{"path", "/var/lib/scheduler/scheduler.db", "/var/lib/scheduler/scheduler.db"},
		{"path with colon and at", "/tmp/u:secret@h.db", "/tmp/u:secret@h.db"},
		{"no user", "postgres://127.0.0.1:5432/test?sslmode=disable", "postgres://127.0.0.1:5432/test?sslmode=disable"},
		{"user without password", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"},
		{"password", "postgres://user:secret@127.0.0.1:1/x", "postgres://user:xxxxx@127.0.0.1:1/x"},
		{"postgresql scheme", "postgresql://user:secret@db.example.com/scheduler", "postgresql://user:xxxxx@db.example.com/scheduler"},
		{"empty password", "postgres://user:@h/db", "postgres://user:xxxxx@h/db"},
		{"no path", "postgres://user:secret@h", "postgres://user:xxxxx@h"},
		{"escaped password", "postgres://user:s%40c%2Fret@h:5432/db", "postgres://user:xxxxx@h:5432/db"},
		{"unescaped at", "postgres://user:se@cret@h/db", "postgres://user:xxxxx@h/db"},
		{"unescaped slash", "postgres://user:se/cret@h/db", "postgres://user:xxxxx@h/db"},
		{"unescaped question mark", "postgres://user:se?cret@h/db", "postgres://user:xxxxx@h/db"},
		{"several hosts", "postgres://user:secret@h1:5432,h2:5432/db?target_session_attrs=read-write", "postgres://user:xxxxx@h1:5432,h2:5432/db?target_session_attrs=read-write"},
		{"password parameter", "postgres://user@h/db?sslmode=require&password=secret", "postgres://user@h/db?sslmode=require&password=xxxxx"},
		{"password parameter first", "postgres://h/db?PASSWORD=secret&sslmode=disable", "postgres://h/db?PASSWORD=xxxxx&sslmode=disable"},
		{"both", "postgres://user:secret@h/db?password=secret2", "postgres://user:xxxxx@h/db?password=xxxxx"},
		{"at in the query", "postgres://user:secret@h/db?application_name=a@b&password=secret2", "postgres://user:xxxxx@b&password=xxxxx"},
		{"password parameter and at in the query", "postgres://h/db?password=secret&x=a@b", "postgres://h/db?password=xxxxx&x=a@b"},
		{"socket", "postgres:///scheduler?host=/run/postgresql", "postgres:///scheduler?host=/run/postgresql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redactDSN(tt.db)
			if got != tt.want {
				t.Errorf("redactDSN(%q) = %q, want %q", tt.db, got, tt.want)
			}
			if isDSN(tt.db) && strings.Contains(got, "secret") {
				t.Errorf("redactDSN(%q) = %q shows the password", tt.db, got)
			}
		})
	}
}

// TestRedactErr: an error that quotes the URL, or its password in either
// form, loses the password and still unwraps to what it wrapped.
func TestRedactErr(t *testing.T) {
	t.Parallel()
	db := "postgres://user:s%40cret@127.0.0.1:1/x"
	base := errors.New("connection refused")
	err := redactErr(&wrapped{msg: "open " + db + ": password s@cret rejected (s%40cret)", err: base}, db)
	if msg := err.Error(); strings.Contains(msg, "cret") || !strings.Contains(msg, "postgres://user:xxxxx@127.0.0.1:1/x") {
		t.Errorf("redactErr = %q, want the URL redacted and no password", msg)
	}
	if !errors.Is(err, base) {
		t.Errorf("redactErr(...) does not unwrap to the error it wrapped")
	}
	short := "postgres://a:b@h/d"
	msg := "-backup: database " + redactDSN(short) + " is PostgreSQL; open /x/postgres:/a:b@h/d: failed; password=b"
	if got, want := redactErr(errors.New(msg), short).Error(), "-backup: database postgres://a:xxxxx@h/d is PostgreSQL; open /x/postgres:/a:xxxxx@h/d: failed; password=xxxxx"; got != want {
		t.Errorf("redactErr with a short password = %q, want %q", got, want)
	}
	if e := (&usageError{base}); redactErr(e, "/tmp/x.db") != e {
		t.Errorf("redactErr changed the error of a file's path")
	}
	if redactErr(nil, db) != nil {
		t.Errorf("redactErr(nil) != nil")
	}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// TestDatabasePath: -db beats $SCHEDULER_DB beats [scheduler].db; a
// relative path in the file is taken from the config's directory, a URL
// as it is.
func TestDatabasePath(t *testing.T) {
	t.Parallel()
	const configFile = "/etc/scheduler/schedules.toml"
	cfgDB := func(db string) *config.Config {
		c := &config.Config{}
		c.Scheduler.DB = db
		return c
	}
	tests := []struct {
		name, flag, env string
		cfg             *config.Config
		want            string
	}{
		{name: "flag over environment and file", flag: "flag.db", env: "postgres://env/db", cfg: cfgDB("file.db"), want: "flag.db"},
		{name: "flag URL", flag: "postgres://u:p@h/db", env: "/env.db", cfg: cfgDB("file.db"), want: "postgres://u:p@h/db"},
		{name: "environment over file", env: "postgres://u:p@h/db", cfg: cfgDB("postgres://file/db"), want: "postgres://u:p@h/db"},
		{name: "environment path", env: "/var/lib/scheduler/scheduler.db", cfg: cfgDB("file.db"), want: "/var/lib/scheduler/scheduler.db"},
		{name: "file relative", cfg: cfgDB("file.db"), want: "/etc/scheduler/file.db"},
		{name: "file absolute", cfg: cfgDB("/srv/file.db"), want: "/srv/file.db"},
		{name: "file URL", cfg: cfgDB("postgresql://h/scheduler"), want: "postgresql://h/scheduler"},
		{name: "default", cfg: &config.Config{}, want: "/etc/scheduler/" + config.DefaultDB},
		{name: "broken file", want: "/etc/scheduler/" + config.DefaultDB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == envDB {
					return tt.env
				}
				return ""
			}
			if got := databasePath(tt.flag, getenv, configFile, tt.cfg); got != tt.want {
				t.Errorf("databasePath(%q) with $%s=%q = %q, want %q", tt.flag, envDB, tt.env, got, tt.want)
			}
		})
	}
}

// TestPostgresURLFailsCleanly: a PostgreSQL URL whose server does not
// answer (or a build without the engine) fails the daemon and every
// command that opens the database with an error that names the URL without
// its password, shows the password nowhere, and creates no file; -check
// names it redacted; -backup refuses it and points to pg_dump.
func TestPostgresURLFailsCleanly(t *testing.T) {
	t.Parallel()
	const dsn = "postgres://user:secret@127.0.0.1:1/x"
	const shown = "postgres://user:xxxxx@127.0.0.1:1/x"
	dir := setup(t, `
[tasks.t]
command = ["true"]
[[schedule]]
name = "s"
cron = "@hourly"
task = "t"
`)
	before := listFiles(t, dir)
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"daemon -db", nil, []string{"-db", dsn}},
		{"daemon $SCHEDULER_DB", []string{envDB + "=" + dsn}, nil},
		{"-status", []string{envDB + "=" + dsn}, []string{"-status"}},
		{"-status -json", nil, []string{"-db", dsn, "-status", "-json"}},
		{"-trigger", []string{envDB + "=" + dsn}, []string{"-trigger", "s"}},
		{"-next", []string{envDB + "=" + dsn}, []string{"-next", "s"}},
		{"-job", []string{envDB + "=" + dsn}, []string{"-job", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := cliEnv(t, dir, append(base, c.env...), c.args...)
			if code == 0 {
				t.Errorf("exit 0, want a failure")
			}
			if strings.Contains(out+errs, "secret") {
				t.Errorf("the password shows:\nstdout: %s\nstderr: %s", out, errs)
			}
			if !strings.Contains(errs, shown) {
				t.Errorf("stderr does not name %s:\n%s", shown, errs)
			}
		})
	}

	out, errs, code := cliEnv(t, dir, append(base, envDB+"="+dsn), "-check")
	if code != 0 || !strings.Contains(out, "database "+shown+"\n") || strings.Contains(out+errs, "secret") {
		t.Errorf("-check: exit %d, want 0 naming database %s without the password\nstdout: %s\nstderr: %s", code, shown, out, errs)
	}
	out, errs, code = cliEnv(t, dir, append(base, envDB+"="+dsn), "-backup", filepath.Join(dir, "copy.db"))
	if code != ExitUsage || !strings.Contains(errs, "pg_dump") || !strings.Contains(errs, shown) || strings.Contains(out+errs, "secret") {
		t.Errorf("-backup: exit %d, want %d pointing to pg_dump and naming %s\nstdout: %s\nstderr: %s", code, ExitUsage, shown, out, errs)
	}
	if after := listFiles(t, dir); !slices.Equal(after, before) {
		t.Errorf("files in the config's directory: %v, want only %v", after, before)
	}
}

// listFiles lists every file and directory under dir, relative to it.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
