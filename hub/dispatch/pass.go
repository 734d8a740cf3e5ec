package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/store"
)

// work is one job's dispatch state.
type work struct {
	name   string
	res    *ledger.Reservation
	resRev int64
	pods   []*corev1.Pod
}

// Pass reconciles every job that holds a reservation or has member pods.
func (d *Dispatcher) Pass(ctx context.Context) error {
	ws, err := d.gather(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, w := range ws {
		if err := d.reconcile(ctx, w); err != nil && !errors.Is(err, store.ErrConflict) {
			errs = append(errs, fmt.Errorf("job %s: %w", w.name, err))
		}
	}
	return errors.Join(errs...)
}

// gather joins the reservations and the hub pods by job.
func (d *Dispatcher) gather(ctx context.Context) ([]*work, error) {
	byJob := map[string]*work{}
	get := func(name string) *work {
		if byJob[name] == nil {
			byJob[name] = &work{name: name}
		}
		return byJob[name]
	}
	opts := store.ListOptions{Limit: 1000}
	for {
		res, err := d.ledger.Reservations().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list reservations: %w", err)
		}
		for _, it := range res.Items {
			w := get(it.Name)
			w.res, w.resRev = it.Object, it.Revision
		}
		if res.Continue == "" {
			break
		}
		opts.Continue = res.Continue
	}
	pods, err := d.hub.CoreV1().Pods(d.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelJob})
	if err != nil {
		return nil, fmt.Errorf("list member pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		w := get(p.Labels[LabelJob])
		w.pods = append(w.pods, p)
	}
	out := make([]*work, 0, len(byJob))
	for _, w := range byJob {
		sort.Slice(w.pods, func(i, j int) bool { return w.pods[i].Name < w.pods[j].Name })
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// deletePods deletes the pods not yet terminating with grace seconds, and
// force-deletes those hanging past grace plus ForceDeleteAfter.
func (d *Dispatcher) deletePods(ctx context.Context, pods []*corev1.Pod, grace int64) error {
	now := d.cfg.Clock.Now()
	var errs []error
	for _, p := range pods {
		g := grace
		if p.DeletionTimestamp != nil {
			limit := p.DeletionTimestamp.Add(d.cfg.ForceDeleteAfter)
			if now.Before(limit) {
				continue
			}
			g = 0
		}
		err := d.hub.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &g})
		if err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(pods) > 0 {
		klog.FromContext(ctx).V(2).Info("deleting members", "pods", len(pods), "grace", grace)
	}
	return errors.Join(errs...)
}
