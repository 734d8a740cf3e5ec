// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// Election is the store election the scheduler replicas campaign in.
const Election = "scheduler"

// Config configures a Scheduler.
type Config struct {
	// Identity names this replica in the election (e.g. the hostname).
	Identity string
	// Interval is the longest time between cycles; default 2s.
	Interval time.Duration
	// Clock is the time source; default the real clock.
	Clock clock.WithTicker
	// Options are passed to placement.Schedule.
	Options []placement.Option
	// FairShareHalfLife is the half-life of queue usage; default 1h.
	FairShareHalfLife time.Duration
	// FairShareSaveInterval is how often the leader stores the fair-share
	// usage for its successor; default 30s.
	FairShareSaveInterval time.Duration
}

// Scheduler is the global gang scheduler loop.
type Scheduler struct {
	cfg    Config
	st     *store.Store
	ledger *ledger.Ledger
	// jobs are read here and changed by hub/jobs (status).
	jobs   store.Reader[*v1alpha1.Job]
	status *jobs.Status
	queues store.Reader[*v1alpha1.Queue]
	// queueStatus asks hub/queues, the owner of Queue records, to write status.
	queueStatus *queues.StatusWriter
	clusters    store.Reader[*v1alpha1.Cluster]
	inventories store.Reader[*registry.InventoryRecord]
	fair        *placement.FairShare
	// fairStore holds the fair-share usage across leaders (fairshare.go);
	// fairLoaded says this leadership restored it, fairSaved when it last saved.
	fairStore  *store.Collection[*placement.FairShareState]
	fairLoaded bool
	fairSaved  time.Time
	// holds are the previous cycle's head-of-queue reservations (leader memory).
	holds []placement.Reservation
}

// Option adjusts a Config.
type Option func(*Config)

// WithPlacementOptions appends options for placement.Schedule.
func WithPlacementOptions(opts ...placement.Option) Option {
	return func(c *Config) { c.Options = append(c.Options, opts...) }
}

// New returns a scheduler on st.
func New(st *store.Store, cfg Config, opts ...Option) *Scheduler {
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.FairShareHalfLife <= 0 {
		cfg.FairShareHalfLife = time.Hour
	}
	if cfg.FairShareSaveInterval <= 0 {
		cfg.FairShareSaveInterval = 30 * time.Second
	}
	if cfg.Identity == "" {
		cfg.Identity = "shoal-hub"
	}
	status := jobs.NewStatus(st)
	return &Scheduler{
		cfg:         cfg,
		st:          st,
		ledger:      ledger.New(st),
		jobs:        status.Reader(),
		status:      status,
		queues:      store.NewReader(st, queues.Kind, store.JSONCodec[*v1alpha1.Queue]()),
		queueStatus: queues.NewStatusWriter(st),
		clusters:    registryClusters(st),
		inventories: registryInventories(st),
		fair:        placement.NewFairShare(cfg.FairShareHalfLife),
		fairStore:   fairShareCollection(st),
	}
}
