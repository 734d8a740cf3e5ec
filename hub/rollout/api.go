// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fr "github.com/shoal-dev/shoal/federation/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

// CreateRequest asks for a rollout.
type CreateRequest struct {
	// Name of the rollout; "" generates one from the revision.
	Name string
	// Revision is the commit to roll out (full SHA).
	Revision string
	// Selector picks clusters by label; only clusters with a GitOps source count.
	Selector string
	// Waves is a cumulative spec such as "1,25%,100%" ("" is "100%").
	Waves string
	// Soak is how long a wave must stay good before the next.
	Soak time.Duration
	// WaveTimeout fails a wave that has not passed this long after its start.
	WaveTimeout time.Duration
}

// Create plans the rollout, stores it and pins its first wave.
func (c *Controller) Create(ctx context.Context, req CreateRequest) (*v1alpha1.Rollout, error) {
	rev := strings.ToLower(strings.TrimSpace(req.Revision))
	if len(rev) != 40 || strings.Trim(rev, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w: revision %q must be a full 40-character commit SHA", ErrInvalid, req.Revision)
	}
	if req.Soak < 0 || req.WaveTimeout < 0 {
		return nil, fmt.Errorf("%w: soak and wave timeout must not be negative", ErrInvalid)
	}
	steps, err := fr.ParseWaves(req.Waves)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	cls, err := c.list(ctx, req.Selector)
	if err != nil {
		return nil, err
	}
	busy, err := c.busyClusters(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	previous := map[string]string{}
	for _, cl := range cls {
		if cl.Spec.GitOps == nil {
			continue
		}
		if other, ok := busy[cl.Name]; ok {
			return nil, fmt.Errorf("%w: cluster %s is in active rollout %s", ErrConflict, cl.Name, other)
		}
		names = append(names, cl.Name)
		previous[cl.Name] = currentCommit(cl)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no cluster with a GitOps source matches %q", ErrInvalid, req.Selector)
	}
	now := c.cfg.Clock.Now()
	r := &v1alpha1.Rollout{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindRollout},
		ObjectMeta: metav1.ObjectMeta{Name: req.Name, CreationTimestamp: metav1.NewTime(now)},
		Spec: v1alpha1.RolloutSpec{Revision: rev, Selector: req.Selector, Waves: req.Waves,
			Soak: metav1.Duration{Duration: req.Soak}, WaveTimeout: metav1.Duration{Duration: req.WaveTimeout}},
	}
	if r.Name == "" {
		r.Name = fmt.Sprintf("%s-%d", rev[:8], now.Unix())
	}
	st, act := fr.Start(fr.Spec{Commit: rev, Waves: fr.Plan(names, steps), Soak: req.Soak, WaveTimeout: req.WaveTimeout}, previous, now)
	r.Status = st
	r.Status.LastUpdateTime = metav1.NewTime(now)
	if _, err := c.rollouts.Create(ctx, r.Name, r); err != nil {
		if errors.Is(err, store.ErrAlreadyExists) {
			return nil, fmt.Errorf("%w: rollout %q exists", ErrConflict, r.Name)
		}
		return nil, err
	}
	if err := c.freeze(ctx, r, cls); err != nil {
		return r, err
	}
	return r, c.carryOut(ctx, r, act)
}

// freeze pins the later waves' clusters that follow a branch or tag to the
// commit they run now, so that none of them moves to a newer head (the
// rolled-out commit, perhaps) before its wave. Clusters pinned already, or
// whose source names a commit, or that never applied one, are left alone.
func (c *Controller) freeze(ctx context.Context, r *v1alpha1.Rollout, cls []*v1alpha1.Cluster) error {
	later := map[string]bool{}
	for _, w := range r.Status.Waves[1:] {
		for _, n := range w.Clusters {
			later[n] = true
		}
	}
	var errs []error
	for _, cl := range cls {
		g := cl.Status.GitOps
		if !later[cl.Name] || cl.Spec.GitOps.Ref.Commit != "" || g == nil || g.PinnedCommit != "" || g.AppliedCommit == "" {
			continue
		}
		if err := c.clusters.PinGitOps(ctx, cl.Name, g.AppliedCommit, r.Name); err != nil {
			errs = append(errs, err)
		}
		pins.WithLabelValues("freeze").Inc()
	}
	return errors.Join(errs...)
}

// currentCommit is what a cluster runs now, its rollback target: the pinned
// commit if any, else the commit it applied last.
func currentCommit(cl *v1alpha1.Cluster) string {
	if g := cl.Status.GitOps; g != nil {
		if g.PinnedCommit != "" {
			return g.PinnedCommit
		}
		return g.AppliedCommit
	}
	return ""
}

// busyClusters maps each cluster of an active rollout to that rollout.
func (c *Controller) busyClusters(ctx context.Context) (map[string]string, error) {
	list, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	busy := map[string]string{}
	for _, r := range list {
		if active(r) {
			for _, cl := range clusters(r) {
				busy[cl] = r.Name
			}
		}
	}
	return busy, nil
}

// Get returns a rollout.
func (c *Controller) Get(ctx context.Context, name string) (*v1alpha1.Rollout, error) {
	r, _, err := c.rollouts.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: rollout %q", ErrNotFound, name)
	}
	return r, err
}

// List returns every rollout, by name.
func (c *Controller) List(ctx context.Context) ([]*v1alpha1.Rollout, error) {
	res, err := c.rollouts.List(ctx, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.Rollout, 0, len(res.Items))
	for _, it := range res.Items {
		out = append(out, it.Object)
	}
	return out, nil
}

// Pause stops ticking an active rollout; pinned clusters stay pinned.
func (c *Controller) Pause(ctx context.Context, name string) (*v1alpha1.Rollout, error) {
	return c.modify(ctx, name, nil, func(r *v1alpha1.Rollout) error {
		if !active(r) {
			return fmt.Errorf("%w: rollout %s is %s", ErrConflict, name, r.Status.Phase)
		}
		r.Spec.Paused = true
		return nil
	})
}

// Resume continues a paused rollout; the current wave's clock restarts (its
// timeout and soak count from now).
func (c *Controller) Resume(ctx context.Context, name string) (*v1alpha1.Rollout, error) {
	return c.modify(ctx, name, nil, func(r *v1alpha1.Rollout) error {
		if !r.Spec.Paused {
			return nil
		}
		r.Spec.Paused = false
		r.Status.WaveStarted = metav1.NewMicroTime(c.cfg.Clock.Now())
		r.Status.GoodSince = nil
		return nil
	})
}

// Abort halts an active rollout and rolls its current wave back.
func (c *Controller) Abort(ctx context.Context, name string) (*v1alpha1.Rollout, error) {
	var act fr.Action
	r, err := c.modify(ctx, name, nil, func(r *v1alpha1.Rollout) error {
		if !active(r) {
			return fmt.Errorf("%w: rollout %s is %s", ErrConflict, name, r.Status.Phase)
		}
		var st fr.State
		st, act = fr.Abort(plan(r), r.Status)
		setState(r, st)
		r.Spec.Paused = false
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, c.carryOut(ctx, r, act)
}
