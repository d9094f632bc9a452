package tasks

import (
	"os"
	"sync"
)

// ProcessGroups tracks running commands, so that a program exiting in a
// hurry can kill them all. It is safe for concurrent use; the zero value is
// ready.
type ProcessGroups struct {
	mu   sync.Mutex
	live map[int]*os.File // lifeline by supervisor pid
}

func (g *ProcessGroups) add(pid int, lifeline *os.File) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		g.live = map[int]*os.File{}
	}
	g.live[pid] = lifeline
}

func (g *ProcessGroups) remove(pid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.live, pid)
}

// KillAll kills every tracked command, its process group and every process
// it started, and returns how many commands it killed. It closes their
// lifelines: each supervisor sends SIGKILL at once and reaps, and the
// commands' own goroutines then see their programs exit.
func (g *ProcessGroups) KillAll() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, lifeline := range g.live {
		if lifeline.Close() == nil {
			n++
		}
	}
	return n
}
