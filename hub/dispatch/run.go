// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

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
	go notifyDrains(ctx, d.clusters.Watch(ctx, rev), poke)
	d.watchPods(ctx, poke)
	ticker := d.cfg.Clock.NewTicker(d.cfg.Interval)
	defer ticker.Stop()
	var wake clock.Timer
	defer func() { stopTimer(wake) }()
	for ctx.Err() == nil {
		if err := d.ensureNamespace(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "ensure the member namespace")
		} else if err := d.Pass(ctx); err != nil && ctx.Err() == nil {
			passes.WithLabelValues("error").Inc()
			klog.FromContext(ctx).Error(err, "dispatch pass failed")
		} else {
			passes.WithLabelValues("ok").Inc()
		}
		stopTimer(wake)
		wake = d.wakeTimer(poke)
		select {
		case <-ctx.Done():
		case <-trigger:
		case <-ticker.C():
		case <-timerC(wake):
		}
	}
	return nil
}

// wakeTimer arms a timer at the earliest deadline the last pass found
// pending (a start deadline), so the pass that acts on it runs on time and
// not on the next interval; a deadline already passed pokes at once. It
// returns nil when no deadline is pending.
func (d *Dispatcher) wakeTimer(poke func()) clock.Timer {
	if d.wake.IsZero() {
		return nil
	}
	in := d.wake.Sub(d.cfg.Clock.Now())
	if in <= 0 {
		poke()
		return nil
	}
	return d.cfg.Clock.NewTimer(in)
}

// timerC is t's channel; nil (never ready) for no timer.
func timerC(t clock.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C()
}

func stopTimer(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
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
