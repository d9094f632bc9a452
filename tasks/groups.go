package tasks

import (
	"os"
	"sync"
)

// ProcessGroups tracks running commands so that a hurried exit can kill
// them. The zero value is ready and safe for concurrent use.
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

// KillAll closes every tracked lifeline, so each supervisor kills and
// reaps its command at once, and returns how many.
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
