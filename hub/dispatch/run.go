// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/hub/store"
)

// Run campaigns for leadership and, while leading, runs passes on the
// interval and whenever jobs or reservations change. It returns nil when
// ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("dispatch"))
	return d.st.RunElected(ctx, Election, d.cfg.Identity, d.lead)
}

// lead runs passes until leadership or ctx ends.
func (d *Dispatcher) lead(ctx context.Context, _ store.Leadership) error {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	rev, _ := d.st.Revision(ctx)
	go store.Notify(ctx, d.jobs.Watch(ctx, rev), poke)
	go store.Notify(ctx, d.ledger.Reservations().Watch(ctx, rev), poke)
	d.watchPods(ctx, poke)
	ticker := d.cfg.Clock.NewTicker(d.cfg.Interval)
	defer ticker.Stop()
	for ctx.Err() == nil {
		if err := d.ensureNamespace(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "ensure the member namespace")
		} else if err := d.Pass(ctx); err != nil && ctx.Err() == nil {
			passes.WithLabelValues("error").Inc()
			klog.FromContext(ctx).Error(err, "dispatch pass failed")
		} else {
			passes.WithLabelValues("ok").Inc()
		}
		select {
		case <-ctx.Done():
		case <-trigger:
		case <-ticker.C():
		}
	}
	return nil
}

// ensureNamespace creates the member pods' namespace once.
func (d *Dispatcher) ensureNamespace(ctx context.Context) error {
	if d.nsReady {
		return nil
	}
	_, err := d.hub.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.cfg.Namespace}},
		metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) {
		d.nsReady = true
		return nil
	}
	return err
}
