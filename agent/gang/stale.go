// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// runStale removes, until ctx ends, the local members of every job queued
// by observe or Load whose epoch is older than the job's newest: after a cut
// to the hub heals, the hub pods of the newer epoch arrive and the old
// members stop at once, without waiting for their hub pods' deletion.
func (g *Gate) runStale(ctx context.Context) {
	for {
		job, quit := g.stale.Get()
		if quit {
			return
		}
		if err := g.removeStale(ctx, job); err != nil {
			klog.FromContext(ctx).Error(err, "Remove stale gang members", "job", job)
			g.stale.AddRateLimited(job)
		} else {
			g.stale.Forget(job)
		}
		g.stale.Done(job)
	}
}

// removeStale stops the running local members of job (a "<namespace>/<job>"
// key) older than its newest epoch, with their own grace period.
func (g *Gate) removeStale(ctx context.Context, job string) error {
	ns, name, _ := strings.Cut(job, "/")
	pods, err := g.cache.PodsOfJob(ns, name)
	if err != nil {
		return err
	}
	newest := g.current(job)
	g.mu.Lock()
	was := g.stopped[job]
	g.mu.Unlock()
	now := map[string]bool{} // the stopped members still in the cache, by name and UID
	defer func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(now) == 0 {
			delete(g.stopped, job)
		} else {
			g.stopped[job] = now
		}
	}()
	for _, p := range pods {
		_, epoch, ok := member(p)
		if !ok || epoch >= newest || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		key := p.Name + "/" + string(p.UID)
		if was[key] {
			now[key] = true
			continue
		}
		msg := fmt.Sprintf("member of epoch %d removed: job %s is at epoch %d", epoch, job, newest)
		if err := g.stopper.Fail(ctx, p.Namespace, p.Name, v1alpha1.ReasonStaleEpoch, msg, nil); err != nil {
			return err
		}
		now[key] = true
	}
	return nil
}

// deleter is the Stopper of a Gate without a pod syncer: it deletes.
type deleter struct{ c kubernetes.Interface }

func (d deleter) Fail(ctx context.Context, ns, name, _, _ string, grace *int64) error {
	err := d.c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: grace})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
