package daemon

import (
	"bytes"
	"context"
	"os"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
)

// A config load makes many times the file's size in short-lived garbage
// while what it keeps grows, and the collector lets the heap reach twice
// what is live before collecting: the load's peak is what the process's
// resident memory keeps. During a load the heap is bounded instead by a
// soft memory limit a little above what the load will keep, estimated from
// the file, so the collector runs when the heap nears that limit. Above it
// the runtime bounds the collector's CPU, so a low estimate slows a load
// but does not stop it. A limit or GOGC the user set in the environment is
// left alone.

// Estimates of what a load keeps: a schedule's Config and its share of
// the load's tables, and the least headroom for the garbage.
const (
	loadPerSchedule = 512
	loadHeadroomMin = 16 << 20
)

var loadLimit struct {
	sync.Mutex
	active bool
}

// limitLoad bounds the heap while a config of data loads and returns the
// function that restores the limit in force before.
func limitLoad(data []byte) (restore func()) {
	// The file's bytes are in use already.
	est := loadPerSchedule * int64(bytes.Count(data, []byte("[[schedule]]")))
	return limitHeap(est, max(est/2, loadHeadroomMin))
}

// The beat's first pass plans and writes a tick for every schedule, a
// few batches of them in memory at a time, and keeps a cursor entry for
// each: the start's second peak, after the load's.
const firstPassPerSchedule = 64

// limitFirstPass bounds the heap, as limitLoad does, from now until the
// beat's first pass has ended or runCtx is done, then gives the pass's
// freed pages back to the system. The returned function ends the bound
// at once.
func (d *Daemon) limitFirstPass(runCtx context.Context) (end func()) {
	keep := firstPassPerSchedule * int64(len(d.running.Schedules))
	restore := limitHeap(keep, max(keep, loadHeadroomMin))
	var once sync.Once
	end = func() { once.Do(restore) }
	go func() {
		select {
		case <-d.firstPass:
			end()
			debug.FreeOSMemory()
		case <-runCtx.Done():
			end()
		}
	}()
	return end
}

// limitHeap sets a soft memory limit keep plus headroom above the memory
// in use, unless the user set GOGC or GOMEMLIMIT or another bound is in
// force, and returns the function that restores the limit before.
func limitHeap(keep, headroom int64) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	loadLimit.Lock()
	defer loadLimit.Unlock()
	if loadLimit.active { // a concurrent bound set it: leave it to restore
		return func() {}
	}
	limit := goMemoryInUse() + keep + headroom
	before := debug.SetMemoryLimit(limit)
	loadLimit.active = true
	return func() {
		loadLimit.Lock()
		defer loadLimit.Unlock()
		debug.SetMemoryLimit(before)
		loadLimit.active = false
	}
}

// goMemoryInUse returns the memory the Go runtime holds and has not
// returned, as the memory limit counts it.
func goMemoryInUse() int64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
