package gitops

import (
	"context"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	gt "github.com/shoal-dev/shoal/federation/gitopstypes"
)

// Sync runs one sync of the current source now and returns the new status.
// A revision that cannot be fetched, built or validated applies nothing and
// leaves the cluster as it was; the error is in the status too.
func (s *Syncer) Sync(ctx context.Context) (gt.Status, error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	src, ok := s.Source()
	if !ok {
		return s.Status(), ErrNoSource
	}
	start := s.opts.Now()
	s.report(func(st *gt.Status) {
		st.SetCondition(s.cond(gt.ConditionReconciling, true, gt.ReasonProgressing, "syncing "+src.URL+" at "+src.Ref.String()))
	})
	res, err := s.syncOnce(ctx, src)
	observeSync(start, s.opts.Now(), err)
	st := s.report(func(st *gt.Status) { s.finish(st, res, err) })
	return st, err
}

// result is what one sync pass learned.
type result struct {
	co       *checkout
	pinned   string // the commit the source pins, known even if fetch fails
	applied  bool   // the revision was applied in full
	inv      inventory
	drifted  []gt.ObjectRef
	healthOK bool
	health   error
}

func (s *Syncer) syncOnce(ctx context.Context, src gt.Source) (result, error) {
	r := result{pinned: src.Ref.Commit}
	ph := phases{log: klog.FromContext(ctx), now: s.opts.Now, last: s.opts.Now()}
	defer ph.done()
	objs, err := s.fetchAndBuild(ctx, src, &r, &ph)
	if err != nil {
		return r, err
	}
	old, err := s.store.load(ctx)
	if err != nil {
		return r, syncErr(gt.ReasonApplyFailed, "%w", err)
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
	s.report(func(st *gt.Status) {
		st.Health, st.HealthMessage = gt.HealthProgressing, "waiting for objects to become ready"
	})
	r.health = s.applier.wait(ctx, object.UnstructuredSetToObjMetadataSet(objs), src.HealthTimeout)
	r.healthOK = r.health == nil
	ph.mark("health")
	return r, r.health
}

// fetchAndBuild checks out the source and builds its objects, labelled with
// Shoal's owner labels.
func (s *Syncer) fetchAndBuild(ctx context.Context, src gt.Source, r *result, ph *phases) ([]*unstructured.Unstructured, error) {
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
func (s *Syncer) applyRevision(ctx context.Context, src gt.Source, objs []*unstructured.Unstructured, old, next inventory, r *result) error {
	// Record what is about to be applied first, so a partial apply is still
	// tracked (and pruned later) if the agent dies halfway.
	if err := s.store.save(ctx, old.union(next), old); err != nil {
		return syncErr(gt.ReasonApplyFailed, "%w", err)
	}
	cs, err := s.applier.apply(ctx, objs, src.HealthTimeout)
	if err != nil {
		return err
	}
	if next.sameApplied(old) {
		r.drifted = drifted(cs)
	}
	if src.Prune {
		stale, err := old.missingFrom(next)
		if err != nil {
			return syncErr(gt.ReasonPruneFailed, "%w", err)
		}
		if _, err := s.applier.prune(ctx, stale); err != nil {
			return err
		}
	}
	if err := s.store.save(ctx, next, old.union(next)); err != nil {
		return syncErr(gt.ReasonApplyFailed, "%w", err)
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
func (s *Syncer) report(update func(*gt.Status)) gt.Status {
	s.mu.Lock()
	update(&s.status)
	st := copyStatus(s.status)
	fn := s.onStatus
	s.mu.Unlock()
	if fn != nil {
		fn(st)
	}
	return st
}

func (s *Syncer) cond(t string, status bool, reason, msg string) gt.Condition {
	return gt.Condition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: s.opts.Now()}
}

func copyStatus(st gt.Status) gt.Status {
	st.Drifted = append([]gt.ObjectRef(nil), st.Drifted...)
	st.Conditions = append([]gt.Condition(nil), st.Conditions...)
	return st
}

// finish writes the outcome of a sync into st.
func (s *Syncer) finish(st *gt.Status, r result, err error) {
	now := s.opts.Now()
	st.LastAttemptTime = now
	st.Drifted = r.drifted
	switch {
	case r.co != nil:
		st.AttemptedRevision, st.AttemptedCommit = r.co.Revision, r.co.Commit
	case r.pinned != "":
		st.AttemptedRevision, st.AttemptedCommit = "sha1:"+r.pinned, r.pinned
	}
	if r.applied {
		st.AppliedRevision, st.AppliedCommit = r.co.Revision, r.co.Commit
		st.InventorySize = len(r.inv.Entries)
		st.Health, st.HealthMessage = gt.HealthHealthy, ""
		if !r.healthOK {
			st.Health, st.HealthMessage = gt.HealthDegraded, r.health.Error()
		}
	}
	st.SetCondition(s.cond(gt.ConditionReconciling, false, gt.ReasonSucceeded, ""))
	if err != nil {
		reason := reasonOf(err, gt.ReasonApplyFailed)
		st.LastError = err.Error()
		st.SetCondition(s.cond(gt.ConditionReady, false, reason, err.Error()))
		st.SetCondition(s.cond(gt.ConditionStalled, stalls(reason), reason, err.Error()))
		return
	}
	st.LastError = ""
	st.LastAppliedTime = now
	st.SetCondition(s.cond(gt.ConditionReady, true, gt.ReasonSucceeded, "applied revision "+st.AppliedRevision))
	st.SetCondition(s.cond(gt.ConditionStalled, false, gt.ReasonSucceeded, ""))
}

// stalls reports whether a failure needs a change in Git or in the source to
// clear (retrying the same revision cannot help).
func stalls(reason string) bool {
	switch reason {
	case gt.ReasonInvalidSource, gt.ReasonBuildFailed, gt.ReasonValidationFailed:
		return true
	}
	return false
}

// sinceSeconds is a helper for metrics.
func sinceSeconds(start, end time.Time) float64 { return end.Sub(start).Seconds() }
