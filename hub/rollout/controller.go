// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fr "github.com/shoal-dev/shoal/federation/rollout"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// Election is the store election Run campaigns in alone. The hub runs
// Lead under its one leadership instead (hub/app), whose leader also wins
// this election so that no older replica ticks rollouts beside it.
const Election = "rollouts"

// DefaultInterval is the default time between ticks.
const DefaultInterval = 5 * time.Second

// Config tunes a Controller.
type Config struct {
	// Identity campaigns for the rollouts election (the hub replica's name).
	Identity string
	// Interval between ticks; default DefaultInterval.
	Interval time.Duration
	// Clock is injected for tests; default the real clock.
	Clock clock.WithTicker
}

// Clusters is what the controller needs of the cluster records' owner,
// hub/registry.Registry: a read of the clusters, and pins it asks for.
type Clusters interface {
	// ListClusters returns the clusters whose labels match selector.
	ListClusters(ctx context.Context, opts store.ListOptions, selector string) (*registry.ClusterList, error)
	// PinGitOps makes cluster sync commit on behalf of rollout by, if
	// every guard holds.
	PinGitOps(ctx context.Context, cluster, commit, by string, guards ...store.Cond) error
}

// Controller stores rollouts and, while it leads, ticks them: it judges the
// current wave from the clusters' reported GitOps status and Ready state and
// asks the registry for the pins and rollbacks federation/rollout decides.
type Controller struct {
	cfg      Config
	store    *store.Store
	clusters Clusters
	rollouts *store.Collection[*v1alpha1.Rollout]
	// held is the guard of the leadership lead holds (nil: none, TickAll
	// driven by hand): every write of a tick carries it, so that a deposed
	// leader that has not noticed yet neither advances a rollout nor pins
	// a cluster. Set and read on lead's goroutine only.
	held *store.Cond
}

// NewController returns a Controller storing rollouts in s and pinning
// clusters through the registry.
func NewController(s *store.Store, clusters Clusters, cfg Config) *Controller {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Identity == "" {
		cfg.Identity = "hub"
	}
	return &Controller{cfg: cfg, store: s, clusters: clusters,
		rollouts: store.NewCollection[*v1alpha1.Rollout](s, KindRollouts, codec{})}
}

// Run ticks every rollout each interval while this replica leads the
// rollouts election, until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	return c.store.RunElected(ctx, Election, c.cfg.Identity, c.Lead)
}

// Lead ticks, every write guarded by l.Held(), until leadership or ctx
// ends: the term of a leadership won by Run or shared with the other
// leader-elected parts (hub/app). It returns nil when ctx ends.
func (c *Controller) Lead(ctx context.Context, l store.Leadership) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("rollout"))
	leader.Set(1)
	defer leader.Set(0)
	held := l.Held()
	c.held = &held
	defer func() { c.held = nil }()
	t := c.cfg.Clock.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		if err := c.TickAll(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Rollout tick failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// TickAll advances every active, unpaused rollout once.
func (c *Controller) TickAll(ctx context.Context) error {
	res, err := c.rollouts.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range res.Items {
		if !active(it.Object) || it.Object.Spec.Paused {
			continue
		}
		if err := c.tick(ctx, it.Name); err != nil {
			errs = append(errs, fmt.Errorf("rollout %s: %w", it.Name, err))
		}
	}
	if err := c.repair(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// repair re-applies pins a rollout decided but could not write (the hub
// failed between storing the state and pinning): a cluster still pinned by
// the rollout, or in the current wave of an active one, gets the commit the
// rollout's state says it must run.
func (c *Controller) repair(ctx context.Context) error {
	res, err := c.rollouts.List(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	cls, err := c.list(ctx, "")
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range res.Items {
		r := it.Object
		want := wantPins(r)
		for _, cl := range cls {
			commit, ok := want[cl.Name]
			if !ok {
				continue
			}
			var pinned, by string
			if g := cl.Status.GitOps; g != nil {
				pinned, by = g.PinnedCommit, g.PinnedBy
			}
			current := inCurrentWave(r, cl.Name)
			if pinned == commit || (by != r.Name && !current) {
				continue
			}
			klog.FromContext(ctx).Info("Repairing a rollout pin", "rollout", r.Name, "cluster", cl.Name, "pinned", pinned, "want", commit)
			if err := c.clusters.PinGitOps(ctx, cl.Name, commit, r.Name, c.guards()...); err != nil {
				errs = append(errs, err)
			}
			pins.WithLabelValues("repair").Inc()
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) tick(ctx context.Context, name string) error {
	obs, err := c.observe(ctx)
	if err != nil {
		return err
	}
	var act fr.Action
	r, err := c.modify(ctx, name, c.guards(), func(r *v1alpha1.Rollout) error {
		if !active(r) || r.Spec.Paused {
			act = fr.Action{}
			return nil
		}
		var st fr.State
		st, act = fr.Tick(plan(r), r.Status, obs, c.cfg.Clock.Now())
		setState(r, st)
		return nil
	})
	if err != nil {
		return err
	}
	return c.carryOut(ctx, r, act)
}

// observe reads every cluster's last report and Ready state.
func (c *Controller) observe(ctx context.Context) (map[string]fr.Observation, error) {
	cls, err := c.list(ctx, "")
	if err != nil {
		return nil, err
	}
	obs := make(map[string]fr.Observation, len(cls))
	for _, cl := range cls {
		obs[cl.Name] = fr.Observation{GitOps: cl.Status.GitOps, Ready: clusterReady(cl)}
	}
	return obs, nil
}

// clusterReady: the agent reports and the cluster is not lost; a cordoned or
// draining cluster is still Ready for GitOps.
func clusterReady(cl *v1alpha1.Cluster) bool {
	switch cl.Status.State {
	case v1alpha1.ClusterReady, v1alpha1.ClusterCordoned, v1alpha1.ClusterDraining:
		return true
	}
	return false
}

// carryOut pins the clusters of a new wave and rolls back a failed one.
func (c *Controller) carryOut(ctx context.Context, r *v1alpha1.Rollout, act fr.Action) error {
	log := klog.FromContext(ctx).WithValues("rollout", r.Name)
	var errs []error
	for _, cl := range act.Pin {
		if err := c.clusters.PinGitOps(ctx, cl, r.Spec.Revision, r.Name, c.guards()...); err != nil {
			errs = append(errs, err)
		}
		pins.WithLabelValues("pin").Inc()
	}
	if len(act.Pin) > 0 {
		log.Info("Wave pinned", "wave", r.Status.Wave+1, "clusters", act.Pin, "commit", r.Spec.Revision)
	}
	names := make([]string, 0, len(act.Rollback))
	for cl := range act.Rollback {
		names = append(names, cl)
	}
	sort.Strings(names)
	for _, cl := range names {
		prev := act.Rollback[cl]
		if err := c.clusters.PinGitOps(ctx, cl, prev, r.Name, c.guards()...); err != nil {
			errs = append(errs, err)
		}
		pins.WithLabelValues("rollback").Inc()
	}
	if len(names) > 0 {
		halts.Inc()
		log.Info("Wave rolled back", "wave", r.Status.Wave+1, "clusters", names, "message", r.Status.Message)
	}
	return errors.Join(errs...)
}

// guards are the conditions of a tick's writes: the leadership's Held
// while lead runs.
func (c *Controller) guards() []store.Cond {
	if c.held == nil {
		return nil
	}
	return []store.Cond{*c.held}
}

// modify applies fn to the stored rollout and writes it back if nothing
// changed in between and every guard holds.
func (c *Controller) modify(ctx context.Context, name string, guards []store.Cond, fn func(*v1alpha1.Rollout) error) (*v1alpha1.Rollout, error) {
	r, _, err := c.rollouts.GuaranteedUpdate(ctx, name, func(r *v1alpha1.Rollout) (*v1alpha1.Rollout, error) {
		if err := fn(r); err != nil {
			return nil, err
		}
		r.Status.LastUpdateTime = metav1.NewTime(c.cfg.Clock.Now())
		return r, nil
	}, guards...)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: rollout %q", ErrNotFound, name)
	}
	return r, err
}

// list returns the clusters matching selector from the registry.
func (c *Controller) list(ctx context.Context, selector string) ([]*v1alpha1.Cluster, error) {
	res, err := c.clusters.ListClusters(ctx, store.ListOptions{}, selector)
	if errors.Is(err, registry.ErrInvalid) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return nil, err
	}
	return res.Items, nil
}
