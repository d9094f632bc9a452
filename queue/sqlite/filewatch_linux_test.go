package sqlite

import (
	"encoding/binary"
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
