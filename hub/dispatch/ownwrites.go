// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// ownWrites holds the member pods the dispatcher wrote (created or
// stamped) until its cache has received the write. A pass that read the
// cache before it had them created members again (each refused as
// existing, then read) and stamped members again: up to 61 of a 256-member
// gang's creates were refused so (docs/scheduling.md, "Session 25"). Each
// write is kept only until the informer's watch has passed its resource
// version, after which the cache is authoritative (a member deleted since
// is gone from both); where versions do not compare, it is not kept.
type ownWrites struct {
	mu   sync.Mutex
	pods map[string]map[types.NamespacedName]*corev1.Pod // job → member → as written (cachedForm)
}

// wrote records member pod p of job as the API server returned it from a
// write.
func (w *ownWrites) wrote(job string, p *corev1.Pod) {
	if p == nil || p.ResourceVersion == "" {
		return
	}
	o, _ := cachedForm(p.DeepCopy())
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[string]map[types.NamespacedName]*corev1.Pod{}
	}
	if w.pods[job] == nil {
		w.pods[job] = map[types.NamespacedName]*corev1.Pod{}
	}
	w.pods[job][types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = o.(*corev1.Pod)
}

// over returns cached (job's members from the cache, sorted by name) with
// the writes the cache has not received yet (its watch is at seen) in
// place of the older versions it holds, and forgets the writes it has
// received.
func (w *ownWrites) over(job string, cached []*corev1.Pod, seen string) []*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	own := w.pods[job]
	if len(own) == 0 {
		return cached
	}
	var out []*corev1.Pod
	for k, p := range own {
		if c, err := resourceversion.CompareResourceVersion(p.ResourceVersion, seen); err != nil || c <= 0 {
			delete(own, k)
			continue
		}
		if out == nil {
			out = append(make([]*corev1.Pod, 0, len(cached)+len(own)), cached...)
		}
		i := sort.Search(len(out), func(i int) bool { return out[i].Name >= p.Name })
		for ; i < len(out) && out[i].Name == p.Name && out[i].Namespace != p.Namespace; i++ {
		}
		switch {
		case i == len(out) || out[i].Name != p.Name:
			out = append(out, nil)
			copy(out[i+1:], out[i:])
			out[i] = p
		case newer(p, out[i]):
			out[i] = p
		}
	}
	if len(own) == 0 {
		delete(w.pods, job)
	}
	if out == nil {
		return cached
	}
	return out
}

// newer says whether a has a later resource version than b (false when
// they do not compare).
func newer(a, b *corev1.Pod) bool {
	c, err := resourceversion.CompareResourceVersion(a.ResourceVersion, b.ResourceVersion)
	return err == nil && c > 0
}
