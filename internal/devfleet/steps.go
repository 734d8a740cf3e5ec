// SPDX-License-Identifier: Apache-2.0

package devfleet

// ProgressFunc is told, after each step of Up, how many of the planned
// steps are done and what the last one was. The steps are states Up
// observed: each cluster's kube-apiserver serving, each KWOK node Ready,
// each cluster's real nodes Ready, shoal-hub ready, each agent started and
// each cluster Ready on the hub, the Git server serving and the clusters
// synced.
type ProgressFunc func(done, total int, step string)

// steps counts Up's progress against its plan.
type steps struct {
	total int
	// done maps a step's key to how much of it is done.
	done map[string]int
}

// planSteps counts the steps Up will take for the planned clusters.
func (f *Fleet) planSteps() {
	n := 0
	for _, c := range f.Clusters {
		n++ // kube-apiserver
		if c.Role != RoleWorkload {
			continue
		}
		n += c.Nodes - len(c.RealNodes)
		if len(c.RealNodes) > 0 {
			n++
		}
	}
	if f.opts.Shoal != nil && !f.opts.NoHub {
		n += 1 + 2*len(f.Workloads())
		if f.opts.Shoal.GitServerBinary != "" {
			n += 2
		}
	}
	f.steps = steps{total: n, done: map[string]int{}}
}

// stepTo records that n units of the step key are done (a count only
// grows) and tells opts.Progress.
func (f *Fleet) stepTo(key string, n int, step string) {
	f.mu.Lock()
	if n <= f.steps.done[key] {
		f.mu.Unlock()
		return
	}
	f.steps.done[key] = n
	done := 0
	for _, v := range f.steps.done {
		done += v
	}
	total, report := f.steps.total, f.opts.Progress
	f.mu.Unlock()
	if report != nil {
		report(done, total, step)
	}
}
