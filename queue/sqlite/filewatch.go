package sqlite

import "errors"

// fileWatch reports writes to a database's files by other processes and
// this one alike: a commit in WAL mode writes the -wal file. It tells the
// pool when to read PRAGMA data_version, so that an idle pool notices
// another process's enqueue at once without polling.
//
// C receives a value (coalesced) after one or more writes, and is closed
// when the watch ends on its own (the directory went away, a read of the
// watch failed); Close ends it and waits for its goroutine.
type fileWatch struct {
	C      <-chan struct{}
	close  func() error
	listen func(writes bool) error
}

// Close stops the watch and returns once its goroutine has returned.
func (w *fileWatch) Close() error { return w.close() }

// Pause stops the reports of writes until Resume, and Resume starts them
// again. This exists for speed: while the file is busy, Watch reads
// data_version on a timer instead (see Watch), and the kernel need not
// make an event of each of its writes. An error ends the watch's use:
// Watch polls.
func (w *fileWatch) Pause() error  { return w.listen(false) }
func (w *fileWatch) Resume() error { return w.listen(true) }

// errNoFileWatch is returned by watchFile where files cannot be watched.
var errNoFileWatch = errors.New("no file watch on this platform")
