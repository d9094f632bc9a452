//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWaitBoundsAnOperatorsWrite: an operator's write waits for its turn
// among the processes writing the database for as long as -wait, then
// fails with exit 1 and says why; -wait must be positive.
func TestWaitBoundsAnOperatorsWrite(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "trigger.log"]
[[schedule]]
name = "monthly"
cron = "0 0 1 * *"
task = "rec"
`)
	createDB(t, filepath.Join(dir, "scheduler.db"))
	mustCLI(t, dir, "-trigger", "monthly", "-key", "first")

	// Hold the write turn as a writing daemon would.
	release, _ := holdWriteTurn(t, dir)
	_, stderr, code := cli(t, dir, "-trigger", "monthly", "-key", "second", "-wait", "300ms")
	if code != 1 || !strings.Contains(stderr, "timed out waiting for the write turn") {
		t.Errorf("-trigger while the turn is held past -wait: exit %d, stderr %q; want 1 and the reason", code, stderr)
	}
	release()
	if out := mustCLI(t, dir, "-trigger", "monthly", "-key", "second", "-wait", "2m"); !strings.Contains(out, "enqueued job") {
		t.Errorf("-trigger once the turn is free printed %q, want an enqueued job", out)
	}
	if _, _, code := cli(t, dir, "-trigger", "monthly", "-wait", "0s"); code != 2 {
		t.Errorf("-wait 0s: exit %d, want 2", code)
	}
}

// holdWriteTurn takes the write turn of the database in dir, the flock on
// scheduler.db-lock that every write takes first, and returns the function
// that gives it back and the lock file's inode. The lock file must exist:
// a write through the database made it. It is closed when the test ends.
func holdWriteTurn(t *testing.T, dir string) (release func(), ino uint64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "scheduler.db-lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open the write turn's lock file: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
			t.Fatal(err)
		}
	}, st.Ino
}

// TestReloadIsLoggedOnceItsConfigIsStored: "config reloaded" comes after
// the daemon stored the new config, so that -status run on seeing the line
// reports the file as loaded. The test holds the write turn (the flock on
// <db>-lock that every write takes first) across the SIGHUP, and waits
// until the idle daemon is blocked on it, which only the store of the
// reload does here: the line must not be in the log by then. Once the turn
// is given back, the line comes, and -status agrees with it.
func TestReloadIsLoggedOnceItsConfigIsStored(t *testing.T) {
	t.Parallel()
	config := `
[tasks.rec]
command = ["./record.sh", "trigger.log"]
[[schedule]]
name = "monthly"
cron = "0 0 1 * *"
task = "rec"
`
	dir := setup(t, config)
	d := startDaemon(t, dir, nil)
	release, ino := holdWriteTurn(t, dir)
	writeFile(t, filepath.Join(dir, "schedules.toml"), config+"# edited\n")
	d.signal(syscall.SIGHUP)
	eventually(t, "the daemon to wait for the write turn", func() bool {
		return flockWaiter(t, d.cmd.Process.Pid, ino)
	})
	if strings.Contains(d.log(), "config reloaded") {
		t.Errorf("the daemon logged \"config reloaded\" before it stored the config")
	}
	release()
	d.waitLog("config reloaded")
	if out := mustCLI(t, dir, "-status"); !strings.Contains(out, "as the daemon loaded it at") {
		t.Errorf("-status right after \"config reloaded\" does not say the daemon runs the file:\n%s", out)
	}
}

// flockWaiter reports whether process pid waits for an flock(2) on the file
// with inode ino: /proc/locks lists such a wait as "-> FLOCK ... pid
// major:minor:inode ...".
func flockWaiter(t *testing.T, pid int, ino uint64) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks to see the daemon wait: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 7 || f[1] != "->" || f[2] != "FLOCK" {
			continue
		}
		if f[5] == strconv.Itoa(pid) && strings.HasSuffix(f[6], ":"+strconv.FormatUint(ino, 10)) {
			return true
		}
	}
	return false
}
