package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
)

// runIn runs the command in-process with args and stdin, and returns its
// stdout, stderr and exit code.
func runIn(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, &out, &errb, nil, Options{Stdin: stdin})
	if err != nil {
		if !errors.Is(err, ErrReported) {
			errb.WriteString(err.Error() + "\n")
		}
	}
	return out.String(), errb.String(), ExitCode(err)
}

// createDatabase makes the database at db as the daemon's start would,
// storing config as the configuration it runs.
func createDatabase(t *testing.T, db, config string) {
	t.Helper()
	ctx := context.Background()
	q, err := engine.Open(ctx, db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.SaveConfig(ctx, config, data); err != nil {
		t.Fatal(err)
	}
}

const inputConfig = `[scheduler]
db = "data/q.db"

[tasks.t]
command = ["true"]

[[schedule]]
name = "s"
cron = "@hourly"
task = "t"
payload = {from = "config"}
`

// TestCheckFindsWhatTheStartWouldFailOn: -check fails, creating nothing,
// for a database the daemon could not open: its directory missing, a file
// in its place, not writable (as a user other than root), a file that is
// not a SQLite database; it passes once the directory is there.
func TestCheckFindsWhatTheStartWouldFailOn(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, dir string) (string, int) {
		t.Helper()
		_, errs, code := runIn(t, nil, "-config", filepath.Join(dir, "schedules.toml"), "-check")
		return errs, code
	}
	t.Run("missing directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "schedules.toml"), inputConfig)
		errs, code := check(t, dir)
		if code != 2 || !strings.Contains(errs, "directory "+filepath.Join(dir, "data")+" does not exist") {
			t.Errorf("-check with no data/: exit %d, stderr %q; want 2 naming the directory", code, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, "data")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("-check created data/: %v", err)
		}
		if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if errs, code := check(t, dir); code != 0 {
			t.Errorf("-check with data/: exit %d, stderr %q", code, errs)
		}
		if ents, _ := os.ReadDir(filepath.Join(dir, "data")); len(ents) != 0 {
			t.Errorf("-check wrote %d files in data/", len(ents))
		}
	})
	t.Run("a file in the way", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "schedules.toml"), inputConfig)
		writeFile(t, filepath.Join(dir, "data"), "not a directory")
		if errs, code := check(t, dir); code != 2 || !strings.Contains(errs, "data is not a directory") {
			t.Errorf("-check with data a file: exit %d, stderr %q", code, errs)
		}
	})
	t.Run("not SQLite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "schedules.toml"), inputConfig)
		os.Mkdir(filepath.Join(dir, "data"), 0o700)
		writeFile(t, filepath.Join(dir, "data", "q.db"), "some other file, long enough to have a header")
		if errs, code := check(t, dir); code != 2 || !strings.Contains(errs, "q.db is not a SQLite database") {
			t.Errorf("-check of a file that is not SQLite: exit %d, stderr %q", code, errs)
		}
	})
	t.Run("unwritable", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() == 0 {
			t.Skip("root writes anywhere; the file-in-the-way case covers a directory root cannot use")
		}
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "schedules.toml"), inputConfig)
		data := filepath.Join(dir, "data")
		os.Mkdir(data, 0o500)
		t.Cleanup(func() { os.Chmod(data, 0o700) })
		if errs, code := check(t, dir); code != 2 || !strings.Contains(errs, "is not writable by") {
			t.Errorf("-check with data/ read-only: exit %d, stderr %q", code, errs)
		}
	})
	t.Run("postgres is not connected to", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "schedules.toml"), inputConfig)
		_, errs, code := runIn(t, nil, "-config", filepath.Join(dir, "schedules.toml"), "-db", "postgres://u@127.0.0.1:1/none", "-check")
		if code != 0 {
			t.Errorf("-check with an unreachable PostgreSQL URL: exit %d, stderr %q", code, errs)
		}
	})
}

// TestWriteCommandsDoNotCreateTheDatabase: -trigger and -pause on a
// database that does not exist say to start the daemon first, and create
// nothing.
func TestWriteCommandsDoNotCreateTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "schedules.toml")
	writeFile(t, config, inputConfig)
	os.Mkdir(filepath.Join(dir, "data"), 0o700)
	for _, args := range [][]string{{"-trigger", "s"}, {"-pause", "s"}} {
		_, errs, code := runIn(t, nil, append([]string{"-config", config}, args...)...)
		if code != 1 || !strings.Contains(errs, "does not exist yet: start the daemon first") {
			t.Errorf("%v on a missing database: exit %d, stderr %q", args, code, errs)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "data")); len(ents) != 0 {
		t.Errorf("the commands left %d files in data/", len(ents))
	}
}

// TestBrokenFileStillNamesTheDatabase: with a file broken elsewhere but its
// db line intact, -status and -trigger find the daemon's database from it
// without -db, and work from the stored config; with no file at all the
// error says it was not found, not that it is broken.
func TestBrokenFileStillNamesTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "schedules.toml")
	writeFile(t, config, inputConfig)
	os.Mkdir(filepath.Join(dir, "data"), 0o700)
	createDatabase(t, filepath.Join(dir, "data", "q.db"), config)
	writeFile(t, config, strings.Replace(inputConfig, `cron = "@hourly"`, `cron = "@hourly"`+"\ntimezone = \"Europe/Pariss\"", 1))

	out, errs, code := runIn(t, nil, "-config", config, "-status")
	if code != 0 || !strings.Contains(out, filepath.Join(dir, "data", "q.db")) || !strings.Contains(errs, "is broken") {
		t.Errorf("-status with a broken file: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	out, errs, code = runIn(t, nil, "-config", config, "-trigger", "s")
	if code != 0 || !strings.Contains(out, "enqueued job") {
		t.Errorf("-trigger with a broken file: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	missing := filepath.Join(dir, "none.toml")
	_, errs, code = runIn(t, nil, "-config", missing, "-status")
	if code != 2 || !strings.Contains(errs, "no config file: not found at "+missing) || strings.Contains(errs, "broken") {
		t.Errorf("-status with no config file: exit %d, stderr %q; want 2, not found, not broken", code, errs)
	}
	out, errs, code = runIn(t, nil, "-config", missing, "-db", filepath.Join(dir, "data", "q.db"), "-status")
	if code != 0 || !strings.Contains(out, missing+" not found: the daemon runs") || !strings.Contains(errs, "no config file: not found at "+missing) || strings.Contains(errs+out, "broken") {
		t.Errorf("-status -db with no config file: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// TestPayloadFromFileAndStdin: -payload @FILE and -payload - carry a
// payload larger than one argument may be (128 KiB), checked as an
// argument is; a missing file, a payload over the bound and one nested too
// deep are usage errors that enqueue nothing.
func TestPayloadFromFileAndStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "schedules.toml")
	writeFile(t, config, inputConfig)
	os.Mkdir(filepath.Join(dir, "data"), 0o700)
	db := filepath.Join(dir, "data", "q.db")
	createDatabase(t, db, config)
	big := strings.Repeat("x", 200<<10)
	file := filepath.Join(dir, "payload.json")
	writeFile(t, file, `{"big": "`+big+`"}`+"\n")

	trigger := func(stdin io.Reader, key, payload string) (string, int) {
		_, errs, code := runIn(t, stdin, "-config", config, "-trigger", "s", "-key", key, "-payload", payload)
		return errs, code
	}
	for _, tc := range []struct {
		key, payload string
		stdin        io.Reader
	}{
		{"file", "@" + file, nil},
		{"stdin", "-", strings.NewReader(`{"big": "` + big + `"}`)},
	} {
		if errs, code := trigger(tc.stdin, tc.key, tc.payload); code != 0 {
			t.Fatalf("-payload %s: exit %d, stderr %q", tc.payload, code, errs)
		}
	}
	q, err := engine.Open(context.Background(), db, engine.Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"file", "stdin"} {
		j, err := q.JobByKey(context.Background(), "s||manual|"+key)
		if err != nil {
			t.Fatalf("job of -payload from %s: %v", key, err)
		}
		var p map[string]string
		if err := json.Unmarshal(j.Payload, &p); err != nil || p["big"] != big || p["from"] != "config" {
			t.Errorf("job of -payload from %s: payload of %d bytes, %v; want the big payload merged over the schedule's", key, len(j.Payload), err)
		}
	}
	q.Close()

	writeFile(t, filepath.Join(dir, "huge.json"), `{"big": "`+strings.Repeat("x", queue.MaxPayloadSize)+`"}`)
	for _, tc := range []struct {
		payload string
		stdin   io.Reader
		want    string
	}{
		{"@" + filepath.Join(dir, "none.json"), nil, "-payload @" + filepath.Join(dir, "none.json") + ": open " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{"@" + filepath.Join(dir, "huge.json"), nil, "-payload: payload too large"},
		{"-", strings.NewReader(`{"a": ` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`), "-payload: payload nested too deep"},
		{`{"a": ` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, nil, "-payload: payload nested too deep"},
		{"-", strings.NewReader(`[1, 2]`), "-payload: not a JSON object"},
	} {
		if errs, code := trigger(tc.stdin, "bad", tc.payload); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("-payload %.40s: exit %d, stderr %.300q; want 2 and %q", tc.payload, code, errs, tc.want)
		}
	}
}
