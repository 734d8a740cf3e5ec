package rollout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fr "github.com/shoal-dev/shoal/federation/rollout"
	"github.com/shoal-dev/shoal/hub/store"
)

// Election is the store election whose leader ticks rollouts.
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

// Controller stores rollouts and, while it leads, ticks them: it judges the
// current wave from the clusters' reported GitOps status and Ready state and
// carries out the pins and rollbacks federation/rollout decides.
type Controller struct {
	cfg      Config
	store    *store.Store
	fleet    *Fleet
	rollouts *store.Collection[*Rollout]
}

// NewController returns a Controller storing rollouts in s and pinning
// clusters through fleet.
func NewController(s *store.Store, fleet *Fleet, cfg Config) *Controller {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Identity == "" {
		cfg.Identity = "hub"
	}
	return &Controller{cfg: cfg, store: s, fleet: fleet,
		rollouts: store.NewCollection(s, KindRollouts, store.JSONCodec[*Rollout]())}
}

// Run ticks every rollout each interval while this replica leads the
// rollouts election, until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("rollout"))
	return c.store.RunElected(ctx, Election, c.cfg.Identity, c.lead)
}

// lead ticks until leadership or ctx ends.
func (c *Controller) lead(ctx context.Context, _ store.Leadership) error {
	leader.Set(1)
	defer leader.Set(0)
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
		if !it.Object.Active() || it.Object.Paused {
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
	cls, err := c.fleet.Clusters(ctx, "")
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range res.Items {
		r := it.Object
		want := r.wantPins()
		for _, cl := range cls {
			commit, ok := want[cl.Name]
			if !ok {
				continue
			}
			var pinned, by string
			if g := cl.Status.GitOps; g != nil {
				pinned, by = g.PinnedCommit, g.PinnedBy
			}
			current := r.Active() && r.State.Wave < len(r.Spec.Waves) && contains(r.Spec.Waves[r.State.Wave], cl.Name)
			if pinned == commit || (by != r.Name && !current) {
				continue
			}
			klog.FromContext(ctx).Info("Repairing a rollout pin", "rollout", r.Name, "cluster", cl.Name, "pinned", pinned, "want", commit)
			if err := c.fleet.Pin(ctx, cl.Name, commit, r.Name); err != nil {
				errs = append(errs, err)
			}
			pins.WithLabelValues("repair").Inc()
		}
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (c *Controller) tick(ctx context.Context, name string) error {
	obs, err := c.observe(ctx)
	if err != nil {
		return err
	}
	var act fr.Action
	r, err := c.modify(ctx, name, func(r *Rollout) error {
		if !r.Active() || r.Paused {
			act = fr.Action{}
			return nil
		}
		r.State, act = fr.Tick(r.Spec, r.State, obs, c.cfg.Clock.Now())
		return nil
	})
	if err != nil {
		return err
	}
	return c.carryOut(ctx, r, act)
}

// observe reads every cluster's last report and Ready state.
func (c *Controller) observe(ctx context.Context) (map[string]fr.Observation, error) {
	cls, err := c.fleet.Clusters(ctx, "")
	if err != nil {
		return nil, err
	}
	obs := make(map[string]fr.Observation, len(cls))
	for _, cl := range cls {
		obs[cl.Name] = fr.Observation{GitOps: StatusFromAPI(cl.Status.GitOps), Ready: clusterReady(cl)}
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
func (c *Controller) carryOut(ctx context.Context, r *Rollout, act fr.Action) error {
	log := klog.FromContext(ctx).WithValues("rollout", r.Name)
	var errs []error
	for _, cl := range act.Pin {
		if err := c.fleet.Pin(ctx, cl, r.Spec.Commit, r.Name); err != nil {
			errs = append(errs, err)
		}
		pins.WithLabelValues("pin").Inc()
	}
	if len(act.Pin) > 0 {
		log.Info("Wave pinned", "wave", r.State.Wave+1, "clusters", act.Pin, "commit", r.Spec.Commit)
	}
	names := make([]string, 0, len(act.Rollback))
	for cl := range act.Rollback {
		names = append(names, cl)
	}
	sort.Strings(names)
	for _, cl := range names {
		prev := act.Rollback[cl]
		if err := c.fleet.Pin(ctx, cl, prev, r.Name); err != nil {
			errs = append(errs, err)
		}
		pins.WithLabelValues("rollback").Inc()
	}
	if len(names) > 0 {
		halts.Inc()
		log.Info("Wave rolled back", "wave", r.State.Wave+1, "clusters", names, "message", r.State.Message)
	}
	return errors.Join(errs...)
}

// modify applies fn to the stored rollout and writes it back if nothing
// changed in between.
func (c *Controller) modify(ctx context.Context, name string, fn func(*Rollout) error) (*Rollout, error) {
	r, _, err := c.rollouts.GuaranteedUpdate(ctx, name, func(r *Rollout) (*Rollout, error) {
		if err := fn(r); err != nil {
			return nil, err
		}
		r.Updated = c.cfg.Clock.Now()
		return r, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: rollout %q", ErrNotFound, name)
	}
	return r, err
}
