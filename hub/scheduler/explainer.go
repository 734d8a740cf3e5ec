// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"sync"

	"k8s.io/klog/v2"
)

// explainer writes a leader's explanations beside its cycles instead of
// within them (docs/scheduling.md, "Explanations"): a cycle hands its
// groups over and goes on, so that its wall time no longer holds the
// writes' transactions and their wait for the store and for a core (at
// F-XL the explain phase was most of the slow cycles' time once their
// thread ran first, docs/scale.md "Session 26"). Lead starts one per
// term; a Cycle called on its own (tests, a replica without the caches)
// writes within the cycle as before.
type explainer struct {
	ctx  context.Context
	sem  chan struct{} // explainWorkers transactions at once
	wg   sync.WaitGroup
	mu   sync.Mutex
	jobs map[string]int64 // job name → 0 while its write is in flight, then the revision written
	log  klog.Logger
	// newest is the newest revision written. The cycles do not wait for
	// their caches to reach it (skip keeps them from explaining a job
	// again meanwhile); a cycle whose booking conflicted does
	// (Scheduler.Lead): a job it booked may have been explained under it.
	newest int64
}

func newExplainer(ctx context.Context) *explainer {
	return &explainer{ctx: ctx, sem: make(chan struct{}, explainWorkers), jobs: map[string]int64{},
		log: klog.FromContext(ctx)}
}

// skip says whether a cycle leaves job alone: its explanation is being
// written, or was written at a revision the cycle's view does not have
// yet (explaining it again would write what it holds). The cycle prunes
// with its view's revision first, so what is left is one or the other.
func (e *explainer) skip(job string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.jobs[job]
	return ok
}

// prune drops the writes a cycle's view at revision seen has (each
// cycle, before skip).
func (e *explainer) prune(seen int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for job, rev := range e.jobs {
		if rev != 0 && rev <= seen {
			delete(e.jobs, job)
		}
	}
}

// start writes the groups in the background, at most explainWorkers
// transactions at once, with write (Scheduler.explainGroup).
func (e *explainer) start(groups [][]explainItem, write func(context.Context, []explainItem) (int64, error)) {
	for _, g := range groups {
		e.mu.Lock()
		for _, it := range g {
			e.jobs[it.job.Name] = 0
		}
		e.mu.Unlock()
		e.wg.Go(func() {
			select {
			case e.sem <- struct{}{}:
			case <-e.ctx.Done():
				e.done(g, 0)
				return
			}
			rev, err := write(e.ctx, g)
			<-e.sem
			if err != nil && e.ctx.Err() == nil {
				e.log.Error(err, "writing waiting jobs' explanations failed; the next cycles explain them again")
			}
			e.done(g, rev)
		})
	}
}

// done records a group's write: at rev, or dropped (rev 0: not written,
// the next cycle explains its jobs again).
func (e *explainer) done(g []explainItem, rev int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, it := range g {
		if rev > 0 {
			e.jobs[it.job.Name] = rev
		} else {
			delete(e.jobs, it.job.Name)
		}
	}
	e.newest = max(e.newest, rev)
}

// written is the newest revision an explanation was written at.
func (e *explainer) written() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.newest
}

// wait waits for the writes in flight (the end of a term: their guards
// fail once leadership is lost, and ctx ends them).
func (e *explainer) wait() { e.wg.Wait() }
