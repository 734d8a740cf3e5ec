// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"fmt"
	"sync"
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
	return d.st.RunElected(ctx, Election, d.cfg.Identity, d.Lead)
}

// Lead dispatches, every write guarded by l.Held(), until leadership or
// ctx ends: the term of a leadership won by Run or shared with the other
// leader-elected parts (hub/app). Config.Workers workers reconcile the jobs
// queued by name (queue.go): a job whose record, reservation or member pod
// changes, a job at its own pending deadline (a prepare or start deadline,
// a grace to cut, a hanging member to look at again), and every job at each
// sweep, which runs every Config.Resync, after a watch error and when a
// cluster's drain or state changes. The clusters are read every
// Config.Interval.
// It returns nil when ctx ends.
func (d *Dispatcher) Lead(ctx context.Context, l store.Leadership) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("dispatch"))
	d.setLeadership(l)
	defer d.setLeadership(nil)
	d.state.Lead(l.Revision())
	defer d.state.Lost()
	earlier, forget := d.resetWakes()
	defer forget() // after the workers stopped
	jq := newJobQueue(d.cfg.Interval)
	d.admit.reset(jq.add)
	defer d.admit.reset(nil)
	var workers sync.WaitGroup
	defer workers.Wait()
	defer jq.q.ShutDown()
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	rev, _ := d.st.Revision(ctx)
	go notifyNames(ctx, d.jobs.WatchNames(ctx, rev), jq.add, poke)
	names := &reservationNames{}
	d.resNames.Store(names)
	defer d.resNames.Store(nil)
	go d.followReservations(ctx, names, rev, jq.add, poke)
	go notifyDrains(ctx, d.clusters.Watch(ctx, rev), poke)
	d.watchPods(ctx, jq.add)
	for range d.cfg.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if d.pods.wait(ctx) == nil { // a job is never read from a cache not synced
				d.work(ctx, jq)
			}
		}()
	}
	ticker := d.cfg.Clock.NewTicker(d.cfg.Interval)
	defer ticker.Stop()
	var wake clock.Timer
	defer func() { stopTimer(wake) }()
	var swept time.Time // the last sweep, when it succeeded (zero: failed)
	for sweep, tick := true, false; ctx.Err() == nil; {
		if tick && !sweep {
			// The clusters every interval; a failed read or sweep, or
			// the resync period past, makes it a sweep.
			sweep = swept.IsZero() || !d.refreshClusters(ctx) || !d.cfg.Clock.Now().Before(swept.Add(d.cfg.Resync))
		}
		if sweep {
			swept = time.Time{}
			if d.sweepAll(ctx, jq) {
				swept = d.cfg.Clock.Now()
			}
		}
		stopTimer(wake)
		wake = d.wakeTimer(jq)
		sweep, tick = false, false
		select {
		case <-ctx.Done():
		case <-trigger:
			sweep = true
		case <-ticker.C():
			tick = true
		case <-timerC(wake): // the next round queues the jobs due
		case <-earlier: // a worker found an earlier deadline: arm for it
		}
	}
	return nil
}

// refreshClusters reads the clusters into the view the reconciles read
// (drains, Lost and NotReady clusters, each agent's last contact). It
// reports whether the read succeeded; a failure is the dispatcher's
// readiness until a sweep succeeds.
func (d *Dispatcher) refreshClusters(ctx context.Context) bool {
	dr, lost, beats, err := d.readClusters(ctx)
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "dispatch: read the clusters")
			d.state.Synced(err)
		}
		return false
	}
	d.view.set(dr, lost, beats)
	return true
}

// sweepAll is one sweep of Lead: ensure the users' namespace, sweep, and
// queue every job gathered; its result is the dispatcher's readiness,
// and it reports whether it succeeded.
func (d *Dispatcher) sweepAll(ctx context.Context, jq *jobQueue) bool {
	err := d.ensureNamespace(ctx)
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "ensure the member namespace")
		}
		d.state.Synced(err)
		return false
	}
	if err = d.pods.wait(ctx); err == nil {
		var scopes []*scope
		scopes, err = d.sweep(ctx)
		for _, s := range scopes {
			jq.add(s.name)
		}
	}
	if ctx.Err() != nil {
		return false
	}
	d.state.Synced(err)
	if err != nil {
		passes.WithLabelValues("error").Inc()
		klog.FromContext(ctx).Error(err, "dispatch sweep failed")
		return false
	}
	passes.WithLabelValues("ok").Inc()
	return true
}

// notifyNames queues the name of every changed object on ch, and pokes
// for a full sweep on an error (a compacted watch may have missed some),
// until ctx ends or ch closes.
func notifyNames[T any](ctx context.Context, ch <-chan store.WatchEvent[T], add func(string), poke func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if ev.Type == store.Error {
				poke()
				continue
			}
			add(ev.Name)
		}
	}
}

// wakeTimer queues the jobs whose deadline (a start deadline, a finished
// job's retention) has passed and arms a timer at the earliest still
// pending, so the reconcile that acts on it runs on time and not on the next
// interval. It returns nil when no deadline is pending.
func (d *Dispatcher) wakeTimer(jq *jobQueue) clock.Timer {
	now := d.cfg.Clock.Now()
	for _, job := range d.due(now) {
		jq.add(job)
	}
	at := d.earliest()
	if at.IsZero() {
		return nil
	}
	return d.cfg.Clock.NewTimer(at.Sub(now))
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

// ensureNamespace creates the users' namespace (Config.Namespace) once.
func (d *Dispatcher) ensureNamespace(ctx context.Context) error {
	return d.ensureNamespaces(ctx, []string{d.cfg.Namespace})
}

// ensureNamespaces creates each namespace once: the users' and the
// clusters' (hub/hubcluster creates a cluster's at registration, with its
// agent's RoleBinding; the dispatcher only makes sure it exists).
func (d *Dispatcher) ensureNamespaces(ctx context.Context, names []string) error {
	d.nsMu.Lock()
	defer d.nsMu.Unlock()
	for _, ns := range names {
		if d.nsReady[ns] {
			continue
		}
		_, err := d.hub.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		d.nsReady[ns] = true
	}
	return nil
}
