package store

import (
	"context"
	"fmt"
	"time"
)

// Groups and chains of fan-ins: several fan-ins over one set of members
// (the first adopts them, the others share them), and fan-ins over a
// fan-in's own job, inserted when it is enqueued.

// thenRecord is how a fan-in stores its job: the job and the fan-ins over
// it, as JSON.
type thenRecord struct {
	NewJob
	Next []FanInSpec `json:",omitempty"`
	Run  string      `json:",omitempty"` // see FanInSpec.Run
}

// PrepareFanIns prepares each of specs (see PrepareFanIn).
func PrepareFanIns(specs []FanInSpec, now time.Time) ([]FanInSpec, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]FanInSpec, len(specs))
	for i, s := range specs {
		var err error
		if out[i], err = PrepareFanIn(s, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// EnqueueWithFanIns implements BeatProtocol.EnqueueWithFanIns.
func (e *Base) EnqueueWithFanIns(ctx context.Context, jobs []NewJob, fanIns []AdvanceFanIn) ([]Enqueued, error) {
	now := e.clock.Now()
	prepared, err := PrepareJobs(jobs, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	a := Advance{Jobs: prepared, FanIns: fanIns}
	var res []Enqueued
	err = e.b.InTx(ctx, true, func(tx Tx) error {
		var err error
		if res, err = e.b.InsertJobs(ctx, tx, prepared, now); err != nil {
			return err
		}
		return e.insertFanIns(ctx, tx, a, res, now)
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if Inserted(res) {
		Wake(e)
	}
	return res, nil
}

// insertFanIns inserts a's fan-ins over its jobs' results res, in tx. A
// group whose members all existed already is left out: their instant was
// materialised before, with or without its fan-ins.
func (e *Base) insertFanIns(ctx context.Context, tx Tx, a Advance, res []Enqueued, now time.Time) error {
	for _, f := range a.FanIns {
		if f.First < 0 || f.N < 0 || f.First+f.N > len(res) || len(f.Specs) == 0 {
			return fmt.Errorf("advance %s: fan-in: members %d+%d out of %d jobs, %d fan-ins", a.Schedule, f.First, f.N, len(res), len(f.Specs))
		}
		members := res[f.First : f.First+f.N]
		if len(members) > 0 && !anyNew(members) {
			continue
		}
		specs, err := PrepareFanIns(f.Specs, now)
		if err != nil {
			return fmt.Errorf("advance %s: %w", a.Schedule, err)
		}
		if _, _, err := InsertFanIns(ctx, e, tx, specs, members, now); err != nil {
			return fmt.Errorf("advance %s: %w", a.Schedule, err)
		}
	}
	return nil
}

// anyNew reports whether one of res was inserted or skipped as a run in
// flight, rather than found under its key.
func anyNew(res []Enqueued) bool {
	for _, r := range res {
		if r.Inserted || r.Skipped {
			return true
		}
	}
	return false
}
