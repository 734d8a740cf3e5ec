// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// recentUnseen is how long a member this agent prepared and created counts
// on its node while the cache does not show the pod at all: the cache shows
// a create within moments, so an entry older than this is a pod deleted
// before the cache saw it.
const recentUnseen = 30 * time.Second

// recentPod is a member this agent prepared that the cache may not show
// (yet) as prepared, and when it was remembered.
type recentPod struct {
	pod *corev1.Pod
	at  time.Time
}

// podsOn returns, from the shared cache, the pods bound to a node and the
// gang members targeting it (the latter as this agent last prepared them
// when the cache lags, those it created prepared included before the cache
// shows them).
func (g *Gate) podsOn(node string) ([]*corev1.Pod, error) {
	out, err := g.cache.PodsOnNode(node)
	if err != nil {
		return nil, err
	}
	members, err := g.cache.PodsTargeting(node)
	if err != nil {
		return nil, err
	}
	// Every pod the cache holds for the node, bound ones included: a
	// member created at its commit is often bound before its create has
	// returned here, and must not be counted again from memory.
	seen := make(map[string]bool, len(out)+len(members))
	for _, p := range out {
		seen[p.Namespace+"/"+p.Name] = true
	}
	for _, p := range members {
		seen[p.Namespace+"/"+p.Name] = true
		out = append(out, g.fresher(p))
	}
	return append(out, g.unseen(node, seen)...), nil
}

// prepared remembers a member this agent just prepared, until the cache
// shows it prepared, so the next member on the same node counts its GPUs.
func (g *Gate) prepared(p *corev1.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rememberPrepared(p)
}

// rememberPrepared is prepared with g.mu held. A pod the cache shows
// already is not remembered: its event, which forgets it (shown), came
// before.
func (g *Gate) rememberPrepared(p *corev1.Pod) {
	node := p.Annotations[v1alpha1.AnnotationTargetNode]
	if node == "" {
		return // holds no node's GPUs: nothing to count
	}
	if c, err := g.cache.Pods().Pods(p.Namespace).Get(p.Name); err == nil && c.UID == p.UID && v1alpha1.PreparedCondition(c) != nil {
		return
	}
	if g.recent[node] == nil {
		g.recent[node] = map[string]recentPod{}
	}
	g.recent[node][p.Namespace+"/"+p.Name] = recentPod{pod: p, at: g.clock.Now()}
}

// fresher returns the recently prepared version of p when the cache lags.
func (g *Gate) fresher(p *corev1.Pod) *corev1.Pod {
	node := p.Annotations[v1alpha1.AnnotationTargetNode]
	g.mu.Lock()
	defer g.mu.Unlock()
	k := p.Namespace + "/" + p.Name
	r, ok := g.recent[node][k]
	if !ok {
		return p
	}
	if v1alpha1.PreparedCondition(p) != nil || p.UID != r.pod.UID {
		g.forgetRecent(node, k)
		return p
	}
	return r.pod
}

// shown forgets a remembered member once the cache shows its pod prepared,
// gone (deleted: tombstone true), or replaced by another pod of its name:
// from then on the cache counts it, or nothing does. Run calls it on every
// cached pod event, so that the last members prepared on a node are not
// left remembered after their pods are gone, holding GPUs the next gang's
// members need.
func (g *Gate) shown(p *corev1.Pod, deleted bool) {
	node := p.Annotations[v1alpha1.AnnotationTargetNode]
	if node == "" {
		return // no member of a node: never remembered (every pod of the cluster comes here)
	}
	k := p.Namespace + "/" + p.Name
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.recent[node][k]
	if ok && (deleted || v1alpha1.PreparedCondition(p) != nil || p.UID != r.pod.UID) {
		g.forgetRecent(node, k)
	}
}

// unseen returns the members prepared here that target node and that the
// cache does not hold (seen: those it does), the held ones included, and
// forgets every one of the node's remembered not shown within
// recentUnseen.
func (g *Gate) unseen(node string, seen map[string]bool) []*corev1.Pod {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*corev1.Pod
	now := g.clock.Now()
	for k, r := range g.recent[node] {
		switch {
		case now.Sub(r.at) > recentUnseen:
			g.forgetRecent(node, k)
		case !seen[k]:
			out = append(out, r.pod)
		}
	}
	return append(out, g.heldOn(node, seen)...)
}

// forgetRecent drops a remembered member; g.mu is held.
func (g *Gate) forgetRecent(node, k string) {
	delete(g.recent[node], k)
	if len(g.recent[node]) == 0 {
		delete(g.recent, node)
	}
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
