// SPDX-License-Identifier: Apache-2.0

package inference

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Clusters lists the names of the Ready clusters a service's replicas may
// be pinned to for spread: those its placement's cluster selector matches
// (nil: every one) that hold nodes of its queue's GPU pools, when the
// queue is bound to pools (docs/pools.md).
type Clusters func(ctx context.Context, s *v1alpha1.InferenceService) ([]string, error)

// DefaultInterval is how often the controller reconciles every service.
const DefaultInterval = time.Second

// Controller reconciles every InferenceService into replica jobs.
type Controller struct {
	svc      *Service
	clusters Clusters
	clock    clock.WithTicker
	interval time.Duration
	held     []store.Cond
	swept    time.Time
}

// NewController returns the controller of svc's services.
func NewController(svc *Service, clusters Clusters, clk clock.WithTicker, interval time.Duration) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Controller{svc: svc, clusters: clusters, clock: clk, interval: interval}
}

// Lead reconciles every interval, every write guarded by l.Held(), until
// ctx ends (a leadership term shared with the scheduler's, hub/app).
func (c *Controller) Lead(ctx context.Context, l store.Leadership) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("inference"))
	c.held = []store.Cond{l.Held()}
	t := c.clock.NewTicker(c.interval)
	defer t.Stop()
	for {
		if err := c.ReconcileAll(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Inference reconcile failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// ReconcileAll reconciles every service once, and cancels replicas of
// services that no longer exist.
func (c *Controller) ReconcileAll(ctx context.Context) error {
	svcs, _, err := c.svc.List(ctx, "")
	if err != nil {
		return err
	}
	var all []error
	names := map[string]bool{}
	for _, s := range svcs {
		names[s.Name] = true
		if err := c.Reconcile(ctx, s); err != nil {
			all = append(all, fmt.Errorf("inference service %s: %w", s.Name, err))
		}
	}
	reconciles.Add(float64(len(svcs)))
	if now := c.clock.Now(); now.Sub(c.swept) >= SweepInterval {
		c.swept = now
		all = append(all, c.sweep(ctx, names))
	}
	return errors.Join(all...)
}

// SweepInterval is how often the controller looks for replicas of deleted
// services (Delete cancels them; this catches a Delete cut short).
const SweepInterval = time.Minute

// sweep cancels the unfinished replica jobs of services not in names.
func (c *Controller) sweep(ctx context.Context, names map[string]bool) error {
	opts := jobs.ListOptions{Replicas: true, Limit: jobs.MaxListLimit}
	for {
		res, err := c.svc.jobs.List(ctx, opts)
		if err != nil {
			return err
		}
		for _, j := range res.Items {
			if svc, ok := j.Labels[v1alpha1.LabelInferenceService]; ok && !names[svc] && !j.Status.Phase.Terminal() {
				if _, _, err := c.svc.jobs.Cancel(ctx, j.Name); err == nil {
					replicaChanges.WithLabelValues("orphan-cancelled").Inc()
				}
			}
		}
		if res.Continue == "" {
			return nil
		}
		opts.Continue = res.Continue
	}
}

// Reconcile decides one service and carries the decision out: replica
// jobs created and cancelled through hub/jobs, then the status written.
func (c *Controller) Reconcile(ctx context.Context, s *v1alpha1.InferenceService) error {
	mv, _, err := c.svc.models.Get(ctx, s.Spec.Model)
	if err != nil {
		return fmt.Errorf("model %s: %w", s.Spec.Model, err)
	}
	tmpl := v1alpha1.ReplicaJob(s, mv, "")
	target := Target{Revision: revisionOf(tmpl), Model: v1alpha1.ModelVersionName(mv.Spec.Model, mv.Spec.Version)}
	js, err := replicaJobs(ctx, c.svc.jobs, s.Spec.Queue, s.Name)
	if err != nil {
		return err
	}
	reps := make([]Replica, 0, len(js))
	for _, j := range js {
		reps = append(reps, replicaOf(j))
	}
	var clusters []string
	if c.clusters != nil && s.Spec.Placement.Spread == v1alpha1.SpreadClusters {
		if clusters, err = c.clusters(ctx, s); err != nil {
			return err
		}
	}
	now := c.clock.Now()
	d := Plan(s, target, reps, clusters, now)
	log := klog.FromContext(ctx).WithValues("service", s.Name)
	var all []error
	for _, name := range d.Cancel {
		if _, _, err := c.svc.jobs.Cancel(ctx, name); err != nil {
			all = append(all, err)
		} else {
			log.V(2).Info("Cancelled replica", "replica", name)
			replicaChanges.WithLabelValues("cancelled").Inc()
		}
	}
	for _, name := range d.Delete {
		if _, _, err := c.svc.jobs.Delete(ctx, name); err != nil {
			all = append(all, err)
		}
	}
	for _, nr := range d.Create {
		j, err := c.replicaJob(ctx, s, mv, target, nr, js)
		if err != nil {
			all = append(all, err)
			continue
		}
		name, err := c.create(ctx, s, j, nr)
		if err != nil {
			all = append(all, err)
			continue
		}
		log.V(2).Info("Created replica", "replica", name, "model", nr.Model, "pin", nr.Pin)
		replicaChanges.WithLabelValues("created").Inc()
	}
	if err := c.svc.updateStatus(ctx, s.Name, s.Generation, d.Status, c.held...); err != nil {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// replicaJob is the job of a new replica of revision nr.Revision: the
// spec's for the target revision; for the stable one, a copy of one of its
// replicas (the spec no longer holds its template), or the spec's with the
// stable model when none is left.
func (c *Controller) replicaJob(ctx context.Context, s *v1alpha1.InferenceService, mv *v1alpha1.ModelVersion, target Target,
	nr NewReplica, siblings []*v1alpha1.Job) (*v1alpha1.Job, error) {
	if nr.Revision == target.Revision {
		return v1alpha1.ReplicaJob(s, mv, ""), nil
	}
	for _, sib := range siblings {
		if sib.Annotations[v1alpha1.AnnotationReplicaRevision] == nr.Revision {
			j := &v1alpha1.Job{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelInferenceService: s.Name},
				Annotations: map[string]string{v1alpha1.AnnotationServedModel: nr.Model}}, Spec: *sib.Spec.DeepCopy()}
			unpin(j, sib.Annotations[v1alpha1.AnnotationSpreadPin])
			return j, nil
		}
	}
	old, _, err := c.svc.models.Get(ctx, nr.Model)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", nr.Model, err)
	}
	return v1alpha1.ReplicaJob(s, old, ""), nil
}

// unpin removes a spread pin from a replica job's cluster selector.
func unpin(j *v1alpha1.Job, pin string) {
	sel := j.Spec.Placement.ClusterSelector
	if pin == "" || sel == nil {
		return
	}
	var keep []metav1.LabelSelectorRequirement
	for _, e := range sel.MatchExpressions {
		if e.Key == v1alpha1.LabelClusterName && len(e.Values) == 1 && e.Values[0] == pin {
			continue
		}
		keep = append(keep, e)
	}
	sel.MatchExpressions = keep
	if len(sel.MatchExpressions) == 0 && len(sel.MatchLabels) == 0 {
		j.Spec.Placement.ClusterSelector = nil
	}
}

// create submits replica job j (named here) of revision nr.Revision,
// pinned as nr says, as the service's owner.
func (c *Controller) create(ctx context.Context, s *v1alpha1.InferenceService, j *v1alpha1.Job, nr NewReplica) (string, error) {
	j.Annotations[v1alpha1.AnnotationReplicaRevision] = nr.Revision
	if nr.Pin != "" {
		j.Annotations[v1alpha1.AnnotationSpreadPin] = nr.Pin
		sel := j.Spec.Placement.ClusterSelector
		if sel == nil {
			sel = &metav1.LabelSelector{}
		}
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: v1alpha1.LabelClusterName, Operator: metav1.LabelSelectorOpIn, Values: []string{nr.Pin}})
		j.Spec.Placement.ClusterSelector = sel
	}
	for range 3 {
		j.Name = s.Name + "-" + suffix()
		_, _, res, err := c.svc.jobs.SubmitAs(ctx, j, s.Status.Owner, false)
		if err != nil {
			return "", err
		}
		if res == jobs.Created {
			return j.Name, nil
		}
	}
	return "", fmt.Errorf("no free replica name for %s", s.Name)
}

// replicaOf reads a replica job.
func replicaOf(j *v1alpha1.Job) Replica {
	r := Replica{Name: j.Name, Model: v1alpha1.ServiceModelOf(j), Revision: j.Annotations[v1alpha1.AnnotationReplicaRevision],
		Pin: j.Annotations[v1alpha1.AnnotationSpreadPin], Phase: j.Status.Phase, Created: j.CreationTimestamp.Time}
	if j.Status.CompletionTime != nil {
		r.Finished = j.Status.CompletionTime.Time
	} else if r.Phase.Terminal() {
		r.Finished = r.Created
	}
	if cs := j.Status.Clusters(); len(cs) > 0 {
		r.Cluster = cs[0]
	}
	if r.Phase == v1alpha1.JobRunning && len(j.Status.Members) > 0 {
		r.Ready = true
		for _, m := range j.Status.Members {
			r.Ready = r.Ready && m.Ready
			if m.Index == 0 {
				r.Address = m.Address
			}
		}
	}
	if r.Phase == v1alpha1.JobFailed {
		for _, c := range j.Status.Conditions {
			if c.Type == v1alpha1.JobConditionFinished {
				r.Message = c.Message
			}
		}
	}
	return r
}

// revisionOf is a replica job's revision: a hash of its spec (template,
// model, placement, size) without its name.
func revisionOf(j *v1alpha1.Job) string {
	b, _ := json.Marshal(j.Spec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:5])
}

// suffix is a replica name's random part: 5 lower-case letters and digits.
func suffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
