package sqlite

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// inotifyEvent encodes one event as the kernel does: the header, then the
// name padded with NULs to len bytes.
func inotifyEvent(mask uint32, name string, padded int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent+padded)
	binary.NativeEndian.PutUint32(b[4:], mask)
	binary.NativeEndian.PutUint32(b[12:], uint32(padded))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func TestInotifyRelevant(t *testing.T) {
	t.Parallel()
	names := [][]byte{[]byte("q.db-wal")}
	cat := func(bs ...[]byte) (out []byte) {
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	tests := []struct {
		name      string
		events    []byte
		hit, gone bool
	}{
		{"wal written", inotifyEvent(unix.IN_MODIFY, "q.db-wal", 16), true, false},
		{"wal created", inotifyEvent(unix.IN_CREATE, "q.db-wal", 16), true, false},
		{"main file by a checkpoint", inotifyEvent(unix.IN_MODIFY, "q.db", 16), false, false},
		{"shm", inotifyEvent(unix.IN_MODIFY, "q.db-shm", 16), false, false},
		{"another file, then the wal", cat(inotifyEvent(unix.IN_MODIFY, "daemon.log", 16), inotifyEvent(unix.IN_MODIFY, "q.db-wal", 32)), true, false},
		{"a longer name with the wal's as prefix", inotifyEvent(unix.IN_MODIFY, "q.db-wal2", 16), false, false},
		{"overflow", inotifyEvent(unix.IN_Q_OVERFLOW, "", 0), true, false},
		{"directory gone", inotifyEvent(unix.IN_IGNORED, "", 0), false, true},
		{"truncated event", inotifyEvent(unix.IN_MODIFY, "q.db-wal", 16)[:20], false, false},
	}
	for _, tt := range tests {
		hit, gone := inotifyRelevant(tt.events, names)
		if hit != tt.hit || gone != tt.gone {
			t.Errorf("%s: inotifyRelevant = %v, %v; want %v, %v", tt.name, hit, gone, tt.hit, tt.gone)
		}
	}
}

// TestFileWatchPauseSetsTheKernelsMask: Pause leaves the kernel a watch of
// the directory that no write matches, and Resume gives it back the
// writes, as /proc/self/fdinfo shows the watch's mask.
func TestFileWatchPauseSetsTheKernelsMask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := watchFile(filepath.Join(dir, "q.db"))
	if err != nil {
		t.Skipf("no file watch here: %v", err)
	}
	defer w.Close()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	// mask finds the inotify watch of dir among the process's descriptors
	// (other tests have theirs) by the directory's inode.
	mask := func() uint64 {
		t.Helper()
		infos, err := filepath.Glob("/proc/self/fdinfo/*")
		if err != nil {
			t.Fatal(err)
		}
		ino := fmt.Sprintf(" ino:%x ", st.Ino)
		for _, p := range infos {
			b, err := os.ReadFile(p)
			if err != nil {
				continue // closed since the glob
			}
			for line := range strings.Lines(string(b)) {
				if !strings.HasPrefix(line, "inotify ") || !strings.Contains(line, ino) {
					continue
				}
				_, m, ok := strings.Cut(line, " mask:")
				if !ok {
					t.Fatalf("no mask in %q", line)
				}
				m, _, _ = strings.Cut(m, " ")
				v, err := strconv.ParseUint(m, 16, 32)
				if err != nil {
					t.Fatalf("mask in %q: %v", line, err)
				}
				return v
			}
		}
		t.Fatalf("no inotify watch of %s in /proc/self/fdinfo", dir)
		return 0
	}
	if m := mask(); m&unix.IN_MODIFY == 0 {
		t.Fatalf("mask %#x at start, want IN_MODIFY in it", m)
	}
	if err := w.Pause(); err != nil {
		t.Fatal(err)
	}
	if m := mask(); m&(unix.IN_MODIFY|unix.IN_CREATE|unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO) != 0 {
		t.Fatalf("mask %#x paused, want none of the writes' events", m)
	}
	if err := w.Resume(); err != nil {
		t.Fatal(err)
	}
	if m := mask(); m&unix.IN_MODIFY == 0 {
		t.Fatalf("mask %#x resumed, want IN_MODIFY in it", m)
	}
	// The same watch goes on: a write of the -wal file is reported.
	if err := os.WriteFile(filepath.Join(dir, "q.db-wal"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w.C)
}
