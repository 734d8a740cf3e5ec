// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// RetryInterval caps the wait after a failed sync, so a transient failure
// (Git server down, webhook unavailable) clears before the next interval.
const RetryInterval = 30 * time.Second

// Options configure a Syncer.
type Options struct {
	// Namespace is the agent's namespace: credentials Secrets are read and
	// the inventory ConfigMap is kept there. Required.
	Namespace string
	// WorkDir caches the Git checkout between syncs. Required.
	WorkDir string
	// Name identifies this sync in owner labels and names the inventory
	// ConfigMap "<Name>-inventory". Default "shoal-gitops".
	Name string
	// OnStatus, if set, receives the status after every sync and when a
	// sync starts. It must not block for long.
	OnStatus func(v1alpha1.GitOpsStatus)
	// InsecureCredentialsOverHTTP allows sending credentials to an http://
	// repository (tests and local demos only).
	InsecureCredentialsOverHTTP bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// PollInterval is how often health is polled; default 1s.
	PollInterval time.Duration
	// Concurrency bounds parallel dry-runs and drift checks; default 4.
	Concurrency int
}

// Syncer keeps one workload cluster equal to one GitOps source.
type Syncer struct {
	opts    Options
	client  client.Client
	applier *applier
	store   inventoryStore
	fetcher *fetcher
	builds  buildCache
	trigger chan struct{}
	syncMu  sync.Mutex // one sync at a time

	mu       sync.Mutex
	src      *v1alpha1.GitOpsSource
	status   v1alpha1.GitOpsStatus
	onStatus func(v1alpha1.GitOpsStatus)
}

// New returns a Syncer applying to the cluster cfg reaches. It has no
// source until SetSource.
func New(cfg *rest.Config, opts Options) (*Syncer, error) {
	if opts.Namespace == "" || opts.WorkDir == "" {
		return nil, errors.New("gitops: Namespace and WorkDir are required")
	}
	if opts.Name == "" {
		opts.Name = "shoal-gitops"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("gitops: http client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("gitops: rest mapper: %w", err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: hc, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("gitops: client: %w", err)
	}
	rm := ssa.NewResourceManager(c, polling.NewStatusPoller(c, mapper, polling.Options{}), ssa.Owner{Field: FieldManager, Group: OwnerGroup})
	rm.SetConcurrency(opts.Concurrency)
	if err := cleanWorkDir(opts.WorkDir); err != nil {
		return nil, err
	}
	return &Syncer{
		opts:     opts,
		client:   c,
		applier:  &applier{rm: rm, owner: opts.Name, ownerNS: opts.Namespace, pollInterval: opts.PollInterval, validateWorkers: opts.Concurrency},
		store:    inventoryStore{client: c, key: client.ObjectKey{Namespace: opts.Namespace, Name: opts.Name + "-inventory"}},
		fetcher:  &fetcher{workDir: opts.WorkDir, insecureHTTP: opts.InsecureCredentialsOverHTTP},
		trigger:  make(chan struct{}, 1),
		status:   v1alpha1.GitOpsStatus{Health: v1alpha1.GitOpsHealthUnknown},
		onStatus: opts.OnStatus,
	}, nil
}

// cleanWorkDir removes checkouts a previous process left behind.
func cleanWorkDir(dir string) error {
	old, _ := filepath.Glob(filepath.Join(dir, "checkout-*"))
	for _, d := range old {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("gitops: clean work dir: %w", err)
		}
	}
	return nil
}

// SetSource sets (or replaces) the source and triggers a sync. The hub pins a
// rollout revision by setting Ref.Commit.
func (s *Syncer) SetSource(src v1alpha1.GitOpsSource) error {
	if err := src.Validate(); err != nil {
		return err
	}
	src = src.WithDefaults()
	s.mu.Lock()
	s.src = &src
	s.mu.Unlock()
	s.Trigger()
	return nil
}

// SetOnStatus replaces the status callback (see Options.OnStatus).
func (s *Syncer) SetOnStatus(fn func(v1alpha1.GitOpsStatus)) {
	s.mu.Lock()
	s.onStatus = fn
	s.mu.Unlock()
}

// Source returns the current source, if any.
func (s *Syncer) Source() (v1alpha1.GitOpsSource, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.src == nil {
		return v1alpha1.GitOpsSource{}, false
	}
	return *s.src, true
}

// Trigger asks Run for a sync now; it never blocks.
func (s *Syncer) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Status returns the status of the last sync.
func (s *Syncer) Status() v1alpha1.GitOpsStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.status.DeepCopy()
}

// Run syncs at once if a source is set, then on every interval (at most
// RetryInterval after a failure) and Trigger, until ctx ends. Sync errors are reported in the status, not returned.
func (s *Syncer) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("inventory", s.store.key)
	for {
		interval := time.Duration(0)
		if src, ok := s.Source(); ok {
			st, err := s.Sync(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				log.Error(err, "GitOps sync failed", "url", src.URL, "ref", src.Ref.String(), "revision", st.AttemptedRevision)
			} else {
				log.V(2).Info("GitOps sync done", "revision", st.Revision, "objects", st.InventorySize, "drifted", len(st.Drifted))
			}
			interval = src.IntervalDuration()
			if err != nil && interval > RetryInterval {
				interval = RetryInterval
			}
		}
		if !s.wait(ctx, interval) {
			return nil
		}
	}
}

// wait returns after interval (0: only on Trigger) or a Trigger, or false
// when ctx ends.
func (s *Syncer) wait(ctx context.Context, interval time.Duration) bool {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTimer(interval)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-s.trigger:
	case <-tick:
	}
	return true
}
