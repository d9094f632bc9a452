// Package liveness lets a watchdog ask a loop whether it still comes round:
// the loop answers each probe when it next goes back to wait, and a wedged
// loop answers none. It knows nothing of what the loop does.
package liveness

// maxWaiting bounds unanswered probes, so that Ask never blocks.
const maxWaiting = 4

// Probes are the questions asked of one loop. Make them with New; they are
// safe for concurrent use.
type Probes struct{ ch chan chan struct{} }

// New returns the probes of one loop.
func New() Probes { return Probes{ch: make(chan chan struct{}, maxWaiting)} }

// Ask returns a channel the loop closes when it next answers. It never
// blocks: past maxWaiting unanswered probes the channel stays open.
func (p Probes) Ask() <-chan struct{} {
	ch := make(chan struct{})
	select {
	case p.ch <- ch:
	default:
	}
	return ch
}

// Waiting is what a loop selects on while it waits: close what it receives.
func (p Probes) Waiting() <-chan chan struct{} { return p.ch }

// Answer answers the probes waiting now, without blocking.
func (p Probes) Answer() {
	for {
		select {
		case ch := <-p.ch:
			close(ch)
		default:
			return
		}
	}
}
