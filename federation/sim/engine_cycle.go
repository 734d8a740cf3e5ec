// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"time"

	"github.com/shoal-dev/shoal/federation/placement"
)

// cycle runs the strategy once and applies its decision.
func (e *engine) cycle() {
	e.dirty = false
	e.m.cycles++
	gangs := make([]placement.Gang, 0, len(e.pending))
	for _, js := range e.pending {
		gangs = append(gangs, js.Gang)
	}
	now := epoch.Add(e.now)
	e.fs.Advance(now, e.m.allocByQueue)
	d := e.strategy.Decide(e.snap, placement.Input{Now: now, Pending: gangs, Queues: e.queues,
		Usage: e.fs.Usage(), Reservations: e.res, Terminating: e.term})
	for _, p := range d.Placements {
		js := e.byID[p.Gang]
		e.check.start(js.Gang, p)
		e.start(js, p)
	}
	if len(d.Placements) > 0 {
		kept := e.pending[:0]
		for _, js := range e.pending {
			if js.pending {
				kept = append(kept, js)
			}
		}
		clear(e.pending[len(kept):])
		e.pending = kept
	}
	for _, pr := range d.Preemptions {
		js := e.byID[pr.Victim]
		if js == nil || !js.running || js.terminating {
			continue
		}
		js.terminating = true
		e.term[pr.Victim] = pr.Preemptor
		e.m.preemptions++
		if pre := e.byID[pr.Preemptor]; pre != nil {
			e.m.byPreemptor[className(pre.Gang.Priority)]++
		}
		e.push(e.now+pr.Grace, evEvict, js.idx, js.attempt)
	}
	e.res = d.Reservations
}

func (e *engine) start(js *jobState, p placement.Placement) {
	js.running, js.pending = true, false
	js.started = e.now
	js.attempt++
	e.push(e.now+js.remaining, evFinish, js.idx, js.attempt)
	if e.cfg.CheckpointEvery < js.remaining {
		e.push(e.now+e.cfg.CheckpointEvery, evCheckpoint, js.idx, js.attempt)
	}
	e.m.placed(js, p, e.now)
	e.m.hold(js, 1)
	e.m.backlog(js.Gang.Queue, -1)
}

// checkpoint is a running job's periodic checkpoint: the scheduler learns
// of it, as the hub does from the job's report, and decides again (the
// hub's scheduler runs on every change of a job); the next one is due.
func (e *engine) checkpoint(js *jobState) {
	_ = e.snap.Checkpointed(js.Gang.ID, epoch.Add(e.now))
	e.dirty = true
	if next := e.now + e.cfg.CheckpointEvery; next < js.started+js.remaining {
		e.push(next, evCheckpoint, js.idx, js.attempt)
	}
}

// stop ends a running job and frees its GPUs.
func (e *engine) stop(js *jobState) {
	_, _ = e.snap.Release(js.Gang.ID)
	e.check.stop(js.Gang.ID)
	js.running = false
	e.m.hold(js, -1)
	if js.terminating {
		js.terminating = false
		delete(e.term, js.Gang.ID)
	}
	e.dirty = true
}

// interrupt stops a job before its end (preemption, node failure), keeps
// the work saved at its last checkpoint, requeues it and returns the
// GPU-hours lost.
func (e *engine) interrupt(js *jobState, saved bool) float64 {
	elapsed := e.now - js.started
	kept := elapsed / e.cfg.CheckpointEvery * e.cfg.CheckpointEvery
	if saved {
		kept = elapsed
	}
	js.remaining = max(time.Minute, js.remaining-kept)
	js.Gang.Estimate = max(time.Minute, js.Gang.Estimate-kept)
	e.stop(js)
	js.pending, js.queuedAt = true, e.now
	e.pending = append(e.pending, js)
	e.m.backlog(js.Gang.Queue, +1)
	lost := (elapsed - kept).Hours() * float64(js.wholeGPUs())
	e.m.lost(e.now, lost)
	return lost
}

func (e *engine) scheduleFailure() {
	if e.cfg.NodeFailuresPerDay <= 0 || len(e.nodes) == 0 {
		return
	}
	perSecond := e.cfg.NodeFailuresPerDay * float64(len(e.nodes)) / 86400
	gap := time.Duration(e.rng.ExpFloat64() / perSecond * float64(time.Second))
	e.push(e.now+gap, evFail, e.rng.IntN(len(e.nodes)), 0)
}

func (e *engine) fail(i int) {
	if e.down[i] {
		return
	}
	e.down[i] = true
	e.m.failures++
	n := e.nodes[i]
	e.snap.SetNodeSchedulable(n.cluster, n.node, false)
	e.check.setUp(n.cluster, n.node, false)
	for _, id := range e.snap.GangsOnNode(n.cluster, n.node) {
		if js := e.byID[id]; js != nil && js.running {
			e.m.failLost += e.interrupt(js, false)
		}
	}
	e.push(e.now+e.cfg.RepairTime, evRepair, i, 0)
	e.dirty = true
}

func (e *engine) repair(i int) {
	e.down[i] = false
	n := e.nodes[i]
	e.snap.SetNodeSchedulable(n.cluster, n.node, true)
	e.check.setUp(n.cluster, n.node, true)
	e.dirty = true
}

// className names the workload's priority classes.
func className(p int32) string {
	switch {
	case p >= placement.PriorityProduction:
		return "production"
	case p >= placement.PriorityBatch:
		return "batch"
	}
	return "spot"
}
