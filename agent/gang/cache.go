package gang

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// node returns a node from the cache once Run has filled it, else from the API.
func (g *Gate) node(ctx context.Context, name string) (*corev1.Node, error) {
	g.mu.Lock()
	nodes := g.nodes
	g.mu.Unlock()
	if nodes != nil {
		return nodes.Get(name)
	}
	return g.local.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// podsOn returns the pods bound to a node and the gang members targeting it.
func (g *Gate) podsOn(ctx context.Context, node string) ([]*corev1.Pod, error) {
	g.mu.Lock()
	idx := g.podIndex
	g.mu.Unlock()
	var out []*corev1.Pod
	if idx != nil {
		bound, err := idx.ByIndex(indexNode, node)
		if err != nil {
			return nil, err
		}
		for _, o := range bound {
			out = append(out, o.(*corev1.Pod))
		}
		members, err := idx.ByIndex(indexTarget, node)
		if err != nil {
			return nil, err
		}
		for _, o := range members {
			out = append(out, g.fresher(o.(*corev1.Pod)))
		}
		return out, nil
	}
	bound, err := g.local.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, err
	}
	gated, err := g.local.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: LabelJob})
	if err != nil {
		return nil, err
	}
	for _, l := range [][]corev1.Pod{bound.Items, gated.Items} {
		for i := range l {
			out = append(out, &l[i])
		}
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

// indexer is the pod cache's index (set by Run).
type indexer = cache.Indexer

// podLister and nodeLister are the caches (set by Run).
type (
	podLister  = corelisters.PodLister
	nodeLister = corelisters.NodeLister
)
