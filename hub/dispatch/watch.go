package dispatch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// watchPods pokes on every change of a member pod in the hub cluster,
// re-establishing the watch when it ends.
func (d *Dispatcher) watchPods(ctx context.Context, poke func()) {
	go func() {
		for ctx.Err() == nil {
			wi, err := d.hub.CoreV1().Pods(d.cfg.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: LabelJob})
			if err != nil {
				klog.FromContext(ctx).V(2).Info("watch member pods failed; retrying", "err", err)
				d.sleep(ctx, d.cfg.Interval)
				continue
			}
			d.forward(ctx, wi, poke)
			poke()
		}
	}()
}

func (d *Dispatcher) forward(ctx context.Context, wi watch.Interface, poke func()) {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			poke()
		}
	}
}
