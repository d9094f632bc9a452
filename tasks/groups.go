package tasks

import (
	"sync"
	"syscall"
)

// ProcessGroups tracks the process groups of running commands, so that a
// program exiting in a hurry can kill them all. It is safe for concurrent
// use; the zero value is ready.
type ProcessGroups struct {
	mu   sync.Mutex
	live map[int]struct{}
}

func (g *ProcessGroups) add(pgid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.live == nil {
		g.live = map[int]struct{}{}
	}
	g.live[pgid] = struct{}{}
}

func (g *ProcessGroups) remove(pgid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.live, pgid)
}

// KillAll sends SIGKILL to every tracked process group and returns how many
// it signalled. The commands' own goroutines then see their leaders exit.
func (g *ProcessGroups) KillAll() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for pgid := range g.live {
		if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
