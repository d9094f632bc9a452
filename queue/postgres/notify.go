package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// The watches of other nodes hear of this store's commits by a NOTIFY on
// the schema's channel. It is not sent in the committing transaction: a
// transaction that sent a NOTIFY takes, at its commit, a lock that every
// other such transaction in the database waits for, until its commit
// record is flushed, so that concurrent notifying commits cannot share a
// WAL flush, which slows many producers enqueueing at once (see
// docs/benchmarks.md, cfg=producers8). Instead a commit that made work
// ready calls notify, and one goroutine per store (notifyLoop)
// sends the NOTIFY in a transaction of its own after it: the commits that
// happen while one NOTIFY is in flight are covered by the next one, so a
// store sends at most one at a time however many commits it makes. The
// cost is a round trip between a commit and the wake-up of other nodes.
//
// The window this opens: a crash between a commit and its NOTIFY loses the
// notification. The watches' slow poll (WatchConfig.Safety) finds the job
// then, as it finds one whose notification was lost with a connection.
// EnqueueTx, which commits in the caller's transaction and has no store,
// still notifies in that transaction.
//
// A store's own watch need not hear of the jobs the store made ready: wake
// told its subscribers (this process's pools) at the commit already. Its
// NOTIFYs that tell of ready jobs carry the store's sender id as payload,
// and its watch passes over them, so that each job enqueued in-process
// does not cost the pool a second look (a look for ready jobs and one for
// cancel requests) that could delay the claim of the next job. A cancel
// request must reach the pools of this process too: its NOTIFY has an
// empty payload, as EnqueueTx's, and every watch hears it.

// notifyNowSQL notifies the schema's watches in a transaction that commits
// without waiting for its WAL flush (synchronous_commit off for it alone,
// set_config's is_local): the notification is delivered at its commit, and
// a notification lost to a server crash is found by the slow poll, like
// any other.
const notifyNowSQL = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`

// notifyTimeout bounds one NOTIFY, and how long Close waits for the last.
const notifyTimeout = 10 * time.Second

// newSender returns a random sender id (see Store.sender).
func newSender() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// notifyCancel is notify after a commit that asked for a cancel: the owed
// NOTIFY wakes this store's watch too.
func (s *Store) notifyCancel() {
	s.cancelOwed.Store(true)
	s.notify()
}

// notify asks notifyLoop for a NOTIFY after a commit of this store that made
// a job ready. It never blocks.
func (s *Store) notify() {
	select {
	case s.notifyOwed <- struct{}{}:
	default: // owed already: the next NOTIFY covers this commit too
	}
}

// notifyLoop sends the NOTIFYs that notify asks for, one at a time, until
// Close; one owed then is still sent, so that a program that enqueues and
// closes (the CLI's -trigger) wakes the other nodes at once.
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
