package sqlite

import "errors"

// fileWatch reports writes to a database's files by any process (a WAL commit
// writes -wal), telling the pool when to read PRAGMA data_version, so an idle
// pool sees other processes' enqueues at once without polling. C receives a
// coalesced value after writes, and closes when the watch ends on its own;
// Close ends it and waits for its goroutine.
type fileWatch struct {
	C      <-chan struct{}
	close  func() error
	listen func(writes bool) error
}

// Close stops the watch and waits for its goroutine.
func (w *fileWatch) Close() error { return w.close() }

// Pause stops the reports of writes until Resume, for speed: while the file
// is busy, Watch reads on a timer. An error ends the watch's use.
func (w *fileWatch) Pause() error  { return w.listen(false) }
func (w *fileWatch) Resume() error { return w.listen(true) }

var errNoFileWatch = errors.New("no file watch on this platform")
