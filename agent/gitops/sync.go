// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"context"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Sync runs one sync of the current source now and returns the new status.
// A revision that cannot be fetched, built or validated applies nothing and
// leaves the cluster as it was; the error is in the status too.
func (s *Syncer) Sync(ctx context.Context) (v1alpha1.GitOpsStatus, error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	src, ok := s.Source()
	if !ok {
		return s.Status(), ErrNoSource
	}
	start := s.opts.Now()
	s.report(func(st *v1alpha1.GitOpsStatus) {
		meta.SetStatusCondition(&st.Conditions, s.cond(v1alpha1.GitOpsConditionReconciling, true, v1alpha1.GitOpsReasonProgressing, "syncing "+src.URL+" at "+src.Ref.String()))
	})
	res, err := s.syncOnce(ctx, src)
	observeSync(start, s.opts.Now(), err)
	st := s.report(func(st *v1alpha1.GitOpsStatus) { s.finish(st, res, err) })
	return st, err
}

// result is what one sync pass learned.
type result struct {
	co       *checkout
	pinned   string // the commit the source pins, known even if fetch fails
	applied  bool   // the revision was applied in full
	inv      inventory
	drifted  []ObjectRef
	healthOK bool
	health   error
}

func (s *Syncer) syncOnce(ctx context.Context, src v1alpha1.GitOpsSource) (result, error) {
	r := result{pinned: src.Ref.Commit}
	ph := phases{log: klog.FromContext(ctx), now: s.opts.Now, last: s.opts.Now()}
	defer ph.done()
	objs, err := s.fetchAndBuild(ctx, src, &r, &ph)
	if err != nil {
		return r, err
	}
	old, err := s.store.load(ctx)
	if err != nil {
		return r, syncErr(v1alpha1.GitOpsReasonApplyFailed, "%w", err)
	}
	next := inventoryOf(objs, r.co.Revision, src.Path)
	// A revision already applied in full was validated then; re-applying it
	// only corrects drift, and each object is still dry-run before it is
	// written.
	if !next.sameApplied(old) {
		if err := s.applier.validate(ctx, s.client, objs); err != nil {
			return r, err
		}
	}
	ph.mark("validate")
	if err := s.applyRevision(ctx, src, objs, old, next, &r); err != nil {
		return r, err
	}
	ph.mark("apply+prune")
	// A new revision, or drift just corrected, is Progressing until its
	// objects are ready again. The periodic re-apply of a revision already
	// applied that changed nothing keeps the health it had: reporting
	// Progressing on every resync would make a healthy cluster leave a
	// rollout's gate during the soak (TestRolloutBrokenBaseHaltsAtCanary
	// saw its fixed rollout halt on it).
	if !next.sameApplied(old) || len(r.drifted) > 0 {
		s.report(func(st *v1alpha1.GitOpsStatus) {
			st.Health, st.HealthMessage = v1alpha1.GitOpsHealthProgressing, "waiting for objects to become ready"
		})
	}
	r.health = s.applier.wait(ctx, object.UnstructuredSetToObjMetadataSet(objs), src.HealthTimeoutDuration())
	r.healthOK = r.health == nil
	ph.mark("health")
	return r, r.health
}

// fetchAndBuild checks out the source and builds its objects, labelled with
// Shoal's owner labels.
func (s *Syncer) fetchAndBuild(ctx context.Context, src v1alpha1.GitOpsSource, r *result, ph *phases) ([]*unstructured.Unstructured, error) {
	auth, err := authOptions(ctx, s.client, s.opts.Namespace, src)
	if err != nil {
		return nil, err
	}
	if r.co, err = s.fetcher.fetch(ctx, src, auth); err != nil {
		return nil, err
	}
	ph.mark("fetch")
	objs, err := s.builds.build(r.co, src.Path)
	if err != nil {
		return nil, err
	}
	s.applier.label(objs)
	ph.mark("build")
	return objs, nil
}

// applyRevision records, applies and prunes a validated object set, and
// stores the new inventory.
func (s *Syncer) applyRevision(ctx context.Context, src v1alpha1.GitOpsSource, objs []*unstructured.Unstructured, old, next inventory, r *result) error {
	// Record what is about to be applied first, so a partial apply is still
	// tracked (and pruned later) if the agent dies halfway.
	if err := s.store.save(ctx, old.union(next), old); err != nil {
		return syncErr(v1alpha1.GitOpsReasonApplyFailed, "%w", err)
	}
	cs, err := s.applier.apply(ctx, objs, src.HealthTimeoutDuration())
	if err != nil {
		return err
	}
	if next.sameApplied(old) {
		r.drifted = drifted(cs)
	}
	if src.Prune {
		stale, err := old.missingFrom(next)
		if err != nil {
			return syncErr(v1alpha1.GitOpsReasonPruneFailed, "%w", err)
		}
		if _, err := s.applier.prune(ctx, stale); err != nil {
			return err
		}
	}
	if err := s.store.save(ctx, next, old.union(next)); err != nil {
		return syncErr(v1alpha1.GitOpsReasonApplyFailed, "%w", err)
	}
	r.applied, r.inv = true, next
	return nil
}

// phases logs how long each step of a sync took, at V(1).
type phases struct {
	log  klog.Logger
	now  func() time.Time
	last time.Time
	kv   []any
}

func (p *phases) mark(name string) {
	now := p.now()
	p.kv = append(p.kv, name, now.Sub(p.last).String())
	p.last = now
}

func (p *phases) done() { p.log.V(1).Info("GitOps sync phases", p.kv...) }

// report updates the status under the lock, hands a copy to OnStatus and
// returns it.
func (s *Syncer) report(update func(*v1alpha1.GitOpsStatus)) v1alpha1.GitOpsStatus {
	s.mu.Lock()
	update(&s.status)
	st := *s.status.DeepCopy()
	fn := s.onStatus
	s.mu.Unlock()
	if fn != nil {
		fn(st)
	}
	return st
}

func (s *Syncer) cond(t string, status bool, reason, msg string) metav1.Condition {
	c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(s.opts.Now())}
	if status {
		c.Status = metav1.ConditionTrue
	}
	return c
}

// finish writes the outcome of a sync into st.
func (s *Syncer) finish(st *v1alpha1.GitOpsStatus, r result, err error) {
	now := metav1.NewTime(s.opts.Now())
	st.LastAttemptTime = &now
	st.Drifted = nil
	for _, d := range r.drifted {
		st.Drifted = append(st.Drifted, d.String())
	}
	switch {
	case r.co != nil:
		st.AttemptedRevision, st.AttemptedCommit = r.co.Revision, r.co.Commit
	case r.pinned != "":
		st.AttemptedRevision, st.AttemptedCommit = "sha1:"+r.pinned, r.pinned
	}
	if r.applied {
		st.Revision, st.AppliedCommit = r.co.Revision, r.co.Commit
		st.InventorySize = int32(len(r.inv.Entries))
		st.Health, st.HealthMessage = v1alpha1.GitOpsHealthHealthy, ""
		if !r.healthOK {
			st.Health, st.HealthMessage = v1alpha1.GitOpsHealthDegraded, r.health.Error()
		}
	}
	meta.SetStatusCondition(&st.Conditions, s.cond(v1alpha1.GitOpsConditionReconciling, false, v1alpha1.GitOpsReasonSucceeded, ""))
	if err != nil {
		reason := reasonOf(err, v1alpha1.GitOpsReasonApplyFailed)
		st.Message = err.Error()
		meta.SetStatusCondition(&st.Conditions, s.cond(v1alpha1.GitOpsConditionReady, false, reason, err.Error()))
		meta.SetStatusCondition(&st.Conditions, s.cond(v1alpha1.GitOpsConditionStalled, stalls(reason), reason, err.Error()))
		return
	}
	st.Message = ""
	st.LastAppliedTime = &now
	meta.SetStatusCondition(&st.Conditions, s.cond(v1alpha1.GitOpsConditionReady, true, v1alpha1.GitOpsReasonSucceeded, "applied revision "+st.Revision))
	meta.SetStatusCondition(&st.Conditions, s.cond(v1alpha1.GitOpsConditionStalled, false, v1alpha1.GitOpsReasonSucceeded, ""))
}

// stalls reports whether a failure needs a change in Git or in the source to
// clear (retrying the same revision cannot help).
func stalls(reason string) bool {
	switch reason {
	case v1alpha1.GitOpsReasonInvalidSource, v1alpha1.GitOpsReasonBuildFailed, v1alpha1.GitOpsReasonValidationFailed:
		return true
	}
	return false
}

// sinceSeconds is a helper for metrics.
func sinceSeconds(start, end time.Time) float64 { return end.Sub(start).Seconds() }
