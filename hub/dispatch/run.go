package dispatch

import (
	"context"
	"time"

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
	log := klog.FromContext(ctx).WithName("dispatch")
	ctx = klog.NewContext(ctx, log)
	for ctx.Err() == nil {
		lead, err := d.st.Campaign(ctx, Election, d.cfg.Identity)
		if err != nil {
			if ctx.Err() == nil {
				log.Error(err, "campaign failed; retrying")
				d.sleep(ctx, time.Second)
			}
			continue
		}
		log.Info("leading the dispatcher", "identity", d.cfg.Identity)
		d.lead(ctx, lead)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = lead.Resign(rctx)
		cancel()
	}
	return nil
}

func (d *Dispatcher) lead(ctx context.Context, lead store.Leadership) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lead.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
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

func (d *Dispatcher) sleep(ctx context.Context, t time.Duration) {
	select {
	case <-ctx.Done():
	case <-d.cfg.Clock.After(t):
	}
}
