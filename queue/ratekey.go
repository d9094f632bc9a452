package queue

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// key returns the bucket key of a job with payload under r's Key, behind
// recover: a Key that panics gives an error carrying the panic and its
// stack (a *PanicError).
func (r Rate) key(payload json.RawMessage) (key string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("rate limit key: %w", &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	return r.Key(payload), nil
}

// rateKeys gives a pool's claims the keys of the ready jobs of its types
// with a keyed rate limit. A claim reads up to store.RateWindow ready jobs
// of such a type inside its write transaction, and a job its bucket holds
// back is read again by every claim until it starts: rateKeys calls the
// type's Key once per job and keeps the keys of the jobs the last claims
// read, so that user code runs in the writer only for the jobs a claim
// reads for the first time. A Key that panics leaves its job without a
// key: the claim takes it without spending a start, and the pool fails it
// without running it (see doomed); the panic is logged once, with its
// stack. It is safe for concurrent use.
type rateKeys struct {
	log *slog.Logger

	mu sync.Mutex
	// cur holds the keys the current claim asked for, prev those of the
	// claim before that asked for any: a job read by both is looked up in
	// prev and kept in cur.
	cur, prev map[int64]rateKey
	// failed holds the errors of the jobs whose key failed and that a
	// claim took, until the worker that gets each fails it.
	failed map[int64]error
}

type rateKey struct {
	key string
	err error
}

func newRateKeys(log *slog.Logger) *rateKeys {
	return &rateKeys{log: log, cur: map[int64]rateKey{}, prev: map[int64]rateKey{}, failed: map[int64]error{}}
}

// keyFunc returns the store's Key of jobType's limit r (see
// store.RateLimit.Key).
func (k *rateKeys) keyFunc(jobType string, r Rate) func(id int64, payload json.RawMessage) (string, error) {
	return func(id int64, payload json.RawMessage) (string, error) {
		k.mu.Lock()
		e, ok := k.cur[id]
		if !ok {
			if e, ok = k.prev[id]; ok {
				k.cur[id] = e
			}
		}
		k.mu.Unlock()
		if ok {
			return e.key, e.err
		}
		key, err := r.key(payload)
		if err != nil {
			k.log.Error("rate limit key function panicked: the job fails without running", "job_id", id, "job_type", jobType, "err", err)
		}
		k.mu.Lock()
		k.cur[id] = rateKey{key: key, err: err}
		k.mu.Unlock()
		return key, err
	}
}

// next starts a claim: the keys the last claims asked for become the ones
// looked up.
func (k *rateKeys) next() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.cur) > 0 {
		k.prev, k.cur = k.cur, map[int64]rateKey{}
	}
}

// claimed notes, of the jobs a claim took, those whose key failed, for
// doomed.
func (k *rateKeys) claimed(jobs []*Job) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, j := range jobs {
		if e, ok := k.cur[j.ID]; ok && e.err != nil {
			k.failed[j.ID] = e.err
		}
	}
}

// doomed returns, once, the error of a claimed job whose key failed; nil
// for any other.
func (k *rateKeys) doomed(id int64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	err := k.failed[id]
	delete(k.failed, id)
	return err
}
