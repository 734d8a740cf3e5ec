// SPDX-License-Identifier: Apache-2.0

package deps

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// hubWatch follows one referenced hub object.
type hubWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// syncWatches starts a watch for each wanted object not watched yet and
// stops the watches of objects no longer wanted (called by collect).
func (s *Syncer) syncWatches(ctx context.Context, wanted map[ref]map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, w := range s.watches {
		if _, ok := wanted[r]; !ok {
			w.cancel()
			delete(s.watches, r)
		}
	}
	for r := range wanted {
		if _, ok := s.watches[r]; !ok {
			s.watches[r] = s.startWatch(ctx, r)
		}
	}
}

// stopWatches stops every watch and waits for them (Run's end).
func (s *Syncer) stopWatches() {
	s.mu.Lock()
	ws := s.watches
	s.watches = map[ref]*hubWatch{}
	s.mu.Unlock()
	for _, w := range ws {
		w.cancel()
		<-w.done
	}
}

// startWatch runs an informer on the hub object r alone (a field selector
// on its name), which updates the copy on every change and reports its
// deletion.
func (s *Syncer) startWatch(ctx context.Context, r ref) *hubWatch {
	k := kinds[r.Kind]
	sel := fields.OneTermEqualSelector(metav1.ObjectNameField, r.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return k.listRT(ctx, s.hub, s.hubNS, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return k.watch(ctx, s.hub, s.hubNS, o)
		},
	}
	wctx, cancel := context.WithCancel(ctx)
	wctx = klog.NewContext(wctx, klog.FromContext(ctx).WithValues("kind", r.Kind, "object", klog.KRef(s.hubNS, r.Name)))
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(lw, s.hub), ObjectType: k.newObj(),
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.refresh(wctx, r, o) },
			UpdateFunc: func(_, o any) { s.refresh(wctx, r, o) },
			DeleteFunc: func(any) { s.deleted(wctx, r) },
		}})
	w := &hubWatch{cancel: cancel, done: make(chan struct{})}
	go func() { defer close(w.done); ctrl.RunWithContext(wctx) }()
	return w
}

// refresh updates the copy of r from the hub object o, if the copy exists.
func (s *Syncer) refresh(ctx context.Context, r ref, o any) {
	src, ok := o.(object)
	if !ok || src.GetName() != r.Name {
		return
	}
	s.writing.RLock()
	err := s.write(ctx, kinds[r.Kind], r, src, "", false)
	s.writing.RUnlock()
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Dependency copy not updated; retried at the next change or resync")
	}
}

// deleted reports, on every member that references r, that its hub object
// is gone; the copy stays for the members that run.
func (s *Syncer) deleted(ctx context.Context, r ref) {
	msg := fmt.Sprintf("%s %q was deleted from namespace %s of the hub cluster; the workload cluster keeps its copy for the running members, new members are refused",
		r.Kind, r.Name, s.hubNS)
	klog.FromContext(ctx).Info("Referenced hub object deleted", "message", msg)
	s.mu.Lock()
	var pods []*corev1.Pod
	for _, c := range s.claims {
		for _, cr := range c.refs {
			if cr == r {
				pods = append(pods, c.hub)
			}
		}
	}
	rec := s.recorder
	s.mu.Unlock()
	if rec == nil {
		return
	}
	for _, p := range pods {
		rec.Event(p, corev1.EventTypeWarning, v1alpha1.ReasonDependencyMissing, msg)
	}
}
