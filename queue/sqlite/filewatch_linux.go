package sqlite

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchFile watches the database at path (absolute) with inotify, on the
// directory: a checkpoint may truncate -wal, the last connection delete it.
// Only -wal matters: in WAL mode every commit writes it. It fails when
// inotify is unavailable or at the user's limits
// (fs.inotify.max_user_instances, max_user_watches).
func watchFile(path string) (*fileWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify init: %w", err)
	}
	// SQLite follows a symbolic link and keeps -wal beside its target.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir, base := filepath.Split(path)
	const mask = unix.IN_MODIFY | unix.IN_CREATE | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO
	// Paused, the watch keeps a mask no file write matches, so a busy
	// writer's pwrites make no events. Removing it would queue IN_IGNORED,
	// read as the directory gone; an empty mask is refused.
	const paused = unix.IN_DELETE_SELF
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	// Non-blocking, the descriptor joins the runtime's poller: Read parks
	// the goroutine, and Close wakes it.
	f := os.NewFile(uintptr(fd), "inotify")
	c := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(c)
		names := [][]byte{[]byte(base + "-wal")}
		buf := make([]byte, 4096) // room for many events; a read returns whole events
		for {
			n, err := f.Read(buf)
			if err != nil {
				return // closed, or the watch is broken: the pool polls
			}
			hit, gone := inotifyRelevant(buf[:n], names)
			if hit {
				select {
				case c <- struct{}{}:
				default:
				}
			}
			if gone {
				return
			}
		}
	}()
	var once sync.Once
	var cerr error
	listen := func(writes bool) error {
		m := uint32(paused)
		if writes {
			m = mask
		}
		rc, err := f.SyscallConn()
		if err != nil {
			return err
		}
		// Control keeps the descriptor open; Fd would make it blocking.
		// Adding the same path replaces the mask.
		var aerr error
		if err := rc.Control(func(fd uintptr) {
			_, aerr = unix.InotifyAddWatch(int(fd), dir, m)
		}); err != nil {
			return err
		}
		if aerr != nil {
			return fmt.Errorf("inotify watch %s: %w", dir, aerr)
		}
		return nil
	}
	return &fileWatch{C: c, listen: listen, close: func() error {
		once.Do(func() {
			cerr = f.Close()
			wg.Wait()
		})
		return cerr
	}}, nil
}

// inotifyRelevant reports whether b's events touch one of names, and whether
// the watch is gone. A queue overflow counts as a hit.
func inotifyRelevant(b []byte, names [][]byte) (hit, gone bool) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			break
		}
		name := bytes.TrimRight(b[unix.SizeofInotifyEvent:end], "\x00")
		switch {
		case ev.Mask&unix.IN_Q_OVERFLOW != 0:
			hit = true
		case ev.Mask&(unix.IN_IGNORED|unix.IN_UNMOUNT) != 0:
			gone = true
		default:
			for _, n := range names {
				if bytes.Equal(name, n) {
					hit = true
				}
			}
		}
		b = b[end:]
	}
	return hit, gone
}
