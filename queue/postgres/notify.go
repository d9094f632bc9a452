package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Other nodes hear of this store's commits by a NOTIFY on the schema's
// channel, sent after the commit, not in it: a notifying commit holds a
// database-wide lock until its record is flushed, so concurrent notifying
// commits cannot share a WAL flush. So a commit that made work ready calls
// notify, and one goroutine per store (notifyLoop) sends a NOTIFY in its own
// transaction, covering the commits made meanwhile. A crash in between loses
// it; the watches' slow poll (WatchConfig.Safety) finds the job. EnqueueTx,
// which has no store, notifies in the caller's transaction.
//
// This process's pools hear of its ready jobs at the commit (wake), so its
// ready NOTIFYs carry the store's sender id, which its own watch skips,
// sparing the pool a second look per job. A cancel's NOTIFY has an empty
// payload, as EnqueueTx's, and every watch hears it.

// notifyNowSQL notifies in a transaction committing without waiting for its
// WAL flush: a notice lost to a server crash is found by the slow poll.
const notifyNowSQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`

// notifyTimeout bounds one NOTIFY, and Close's wait for the last.
const notifyTimeout = 10 * time.Second

func newSender() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// notifyCancel is notify after a cancel request, which this store's watch
// must hear too.
func (s *Store) notifyCancel() {
	s.cancelOwed.Store(true)
	s.notify()
}

// notify asks notifyLoop for a NOTIFY after a commit that made a job ready.
// It never blocks.
func (s *Store) notify() {
	select {
	case s.notifyOwed <- struct{}{}:
	default: // already owed: the next NOTIFY covers this commit too
	}
}

// notifyLoop sends the NOTIFYs notify asks for, one at a time, until Close,
// then any still owed, so the CLI's -trigger wakes other nodes.
func (s *Store) notifyLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.notifyOwed:
			s.sendNotify()
		case <-s.stop:
			select {
			case <-s.notifyOwed:
				s.sendNotify()
			default:
			}
			return
		}
	}
}

func (s *Store) sendNotify() {
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	payload := s.sender
	if s.cancelOwed.Swap(false) {
		payload = ""
	}
	if _, err := s.pool.Exec(ctx, notifyNowSQL, s.channel, payload); err != nil {
		s.log.WarnContext(ctx, "notify other nodes", "channel", s.channel, "err", err)
	}
}
