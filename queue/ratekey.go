package queue

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
)

// key returns payload's bucket key; a Key that panics gives a wrapped
// *PanicError.
func (r Rate) key(payload json.RawMessage) (key string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("rate limit key: %w", &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	return r.Key(payload), nil
}

// rateKeys gives a pool's claims the keys of ready jobs of keyed limits. A
// held-back job is read by every claim until it starts, so rateKeys calls Key
// once per job and keeps the last claims' keys, running user code in the
// writer only for new jobs. A Key that panics leaves its job keyless: claimed
// without a start, failed unrun (see doomed), logged once. It is safe for
// concurrent use.
type rateKeys struct {
	log *slog.Logger

	mu        sync.Mutex
	cur, prev map[int64]rateKey // keys of this claim and of the last that asked
	failed    map[int64]error   // errors of claimed jobs whose key failed, until doomed
}

type rateKey struct {
	key string
	err error
}

func newRateKeys(log *slog.Logger) *rateKeys {
	return &rateKeys{log: log, cur: map[int64]rateKey{}, prev: map[int64]rateKey{}, failed: map[int64]error{}}
}

// keyFunc returns jobType's store.RateLimit.Key.
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

// next starts a claim: the last claim's keys become the ones looked up.
func (k *rateKeys) next() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.cur) > 0 {
		k.prev, k.cur = k.cur, map[int64]rateKey{}
	}
}

func (k *rateKeys) claimed(jobs []*Job) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, j := range jobs {
		if e, ok := k.cur[j.ID]; ok && e.err != nil {
			k.failed[j.ID] = e.err
		}
	}
}

// doomed returns, once, the error of a claimed job whose key failed.
func (k *rateKeys) doomed(id int64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	err := k.failed[id]
	delete(k.failed, id)
	return err
}
