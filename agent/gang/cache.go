// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// podsOn returns, from the shared cache, the pods bound to a node and the
// gang members targeting it (the latter as this agent last prepared them
// when the cache lags).
func (g *Gate) podsOn(node string) ([]*corev1.Pod, error) {
	out, err := g.cache.PodsOnNode(node)
	if err != nil {
		return nil, err
	}
	members, err := g.cache.PodsTargeting(node)
	if err != nil {
		return nil, err
	}
	for _, p := range members {
		out = append(out, g.fresher(p))
	}
	return out, nil
}

// prepared remembers a member this agent just prepared, until the cache
// shows it, so the next member on the same node counts its GPUs.
func (g *Gate) prepared(p *corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recent[p.Namespace+"/"+p.Name] = p
}

// fresher returns the recently prepared version of p when the cache lags.
func (g *Gate) fresher(p *corev1.Pod) *corev1.Pod {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := p.Namespace + "/" + p.Name
	r, ok := g.recent[k]
	if !ok {
		return p
	}
	if preparedCondition(p) != nil || p.UID != r.UID {
		delete(g.recent, k)
		return p
	}
	return r
}

// lockNode serialises prepares targeting one node.
func (g *Gate) lockNode(node string) func() {
	g.mu.Lock()
	m, ok := g.nodeLocks[node]
	if !ok {
		m = &sync.Mutex{}
		g.nodeLocks[node] = m
	}
	g.mu.Unlock()
	m.Lock()
	return m.Unlock
}
