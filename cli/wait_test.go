//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
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
	mustCLI(t, dir, "-trigger", "monthly", "-key", "first")

	// Hold the write turn as a writing daemon would.
	f, err := os.OpenFile(filepath.Join(dir, "scheduler.db-lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open the lock file the first trigger created: %v", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := cli(t, dir, "-trigger", "monthly", "-key", "second", "-wait", "300ms")
	if code != 1 || !strings.Contains(stderr, "timed out waiting for the write turn") {
		t.Errorf("-trigger while the turn is held past -wait: exit %d, stderr %q; want 1 and the reason", code, stderr)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, dir, "-trigger", "monthly", "-key", "second", "-wait", "2m"); !strings.Contains(out, "enqueued job") {
		t.Errorf("-trigger once the turn is free printed %q, want an enqueued job", out)
	}
	if _, _, code := cli(t, dir, "-trigger", "monthly", "-wait", "0s"); code != 2 {
		t.Errorf("-wait 0s: exit %d, want 2", code)
	}
}
