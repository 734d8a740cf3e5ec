// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"golang.org/x/time/rate"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/pools"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// Election is the store election Run campaigns in alone. The hub runs
// Lead under its one leadership instead (hub/app), whose leader also wins
// this election so that no older replica schedules beside it.
const Election = "scheduler"

// Config configures a Scheduler.
type Config struct {
	// Identity names this replica in the election (e.g. the hostname).
	Identity string
	// Interval is the longest time between cycles; default 2s.
	Interval time.Duration
	// Pace is the least pause after a leader's cycle that placed and
	// preempted nothing, as a multiple of that cycle's duration (at most
	// Interval): under a steady stream of changes that only add waiting
	// jobs, such cycles take at most about 1/(1+Pace) of a core, leaving
	// the rest to intake and dispatch on the same machine. Default 1;
	// negative: no pause.
	Pace float64
	// Clock is the time source; default the real clock.
	Clock clock.WithTicker
	// Options are passed to placement.Schedule.
	Options []placement.Option
	// FairShareHalfLife is the half-life of queue usage; default 1h.
	FairShareHalfLife time.Duration
	// FairShareSaveInterval is how often the leader stores the fair-share
	// usage for its successor; default 30s.
	FairShareSaveInterval time.Duration
	// ExplanationRate bounds the waiting jobs' explanations rewritten
	// because they changed in meaning (a job's first explanation is not
	// bounded), per second, with ExplanationBurst at once: when capacity
	// frees or fills on a full fleet, every waiting job's explanation can
	// change at once (tens of thousands of writes in one cycle); the
	// rest are written by the next cycles, reason changes first. Defaults
	// 200/s and 1,000; a negative rate: no bound.
	ExplanationRate  float64
	ExplanationBurst int
	// CycleNice is the nice value of the leader's cycle thread (0: the
	// process's; -20 to 19): below the process's it lets a cycle that
	// waits for a core get one before the hub's other work and the
	// machine's other processes (docs/scheduling.md, "The cycle's
	// thread"). It needs CAP_SYS_NICE; without it the cycle runs at the
	// process's and the leader logs why once per term.
	CycleNice int
	// SlowCycle is the duration from which a cycle's phases, CPU and waits
	// are logged ("slow scheduling cycle"); default 500ms.
	SlowCycle time.Duration
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
	// leases are the clusters' heartbeat leases (registry.Lease), read for
	// the heartbeat-age gauge only.
	leases      store.Reader[*registry.Lease]
	inventories store.Reader[*registry.InventoryRecord]
	// pools are hub/pools' GPU pools (cordons, queues' pools).
	pools store.Reader[*v1alpha1.GPUPool]
	fair  *placement.FairShare
	// fairStore holds the fair-share usage across leaders (fairshare.go);
	// fairLoaded says this leadership restored it, fairSaved when it last saved.
	fairStore  *store.Collection[*placement.FairShareState]
	fairLoaded bool
	fairSaved  time.Time
	// holds are the previous cycle's head-of-queue reservations, stored
	// for the next leader (holds.go); holdsSaved what was stored last.
	holds, holdsSaved []placement.Reservation
	holdStore         *store.Collection[*holdsState]
	// state is this replica's standing in the election, for readiness.
	state *store.LeaderState
	// caches are the watch-fed view of the store while this replica leads
	// (nil otherwise: a cycle then lists the store afresh).
	caches *caches
	// wrote is the newest revision this leader wrote a job at (its
	// bookings and preemptions; its explanations only after a conflict,
	// explainer.newest), booked the newest it booked at; the next snapshot
	// waits until the caches have them.
	wrote, booked int64
	// wroteMu guards wrote, which the explainer's writes advance beside
	// the cycles.
	wroteMu sync.Mutex
	// snaps builds each cycle's snapshot on the layout of the last one
	// while the fleet's layout does not change (placement.Builder).
	snaps placement.Builder
	// gpus is the last count of the fleet's GPUs for the gauges
	// (fleetgpus.go), reset when leadership ends.
	gpus gpuView
	// threadCPU says the cycles run locked to their OS thread (Lead), so
	// that its CPU time is theirs.
	threadCPU bool
	// explainLimit bounds the changed explanations written
	// (Config.ExplanationRate).
	explainLimit *rate.Limiter
	// explainer writes a leader's explanations beside its cycles (set by
	// Lead for its term; nil: a cycle writes them itself).
	explainer *explainer
	// allocs is the last cycle's running gangs' array, filled again by the
	// next.
	allocs []*placement.Allocation
	// built is the take of the reservations whose running gangs snaps
	// holds (zero: none), volatile the reservations whose running gang
	// changes without them or their job changing (placementSnapshot), and
	// received the inventories' report times it was built with.
	built    takeID
	volatile map[string]bookedJob
	received map[string]time.Time
	// builtHook, set only by tests, sees each cycle's placement snapshot
	// as built (changed: from what changed since the last take).
	builtHook func(f *fleet, snap *placement.Snapshot, changed bool)
	// pending and pendingJobs are the last cycle's pending gangs (the
	// gangs of the jobs' cached pending forms) and their jobs (input),
	// filled again by the next.
	pending     []*placement.Gang
	pendingJobs pendingSet
	// waits is the last cycle's decision's Waiting, which the next fills
	// again (placement.Input.WaitBuffer).
	waits []placement.Wait
	// queueWritten is when this leadership last wrote each queue's status
	// (queuestatus.go); pokeAt asks for a cycle after a while (nil when
	// not leading).
	queueWritten map[string]time.Time
	pokeAt       func(time.Duration)
	// queueWriter writes a leader's queue statuses beside its cycles (set
	// by Lead; nil: the cycle writes them, queuestatus.go).
	queueWriter *queueWriter
}

// State is the scheduler's standing in its election: leading and synced
// once a cycle of the current leadership completed (the readiness check
// scheduler-leader).
func (s *Scheduler) State() *store.LeaderState { return s.state }

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
	if cfg.Pace == 0 {
		cfg.Pace = 1
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
	if cfg.SlowCycle <= 0 {
		cfg.SlowCycle = DefaultSlowCycle
	}
	if cfg.Identity == "" {
		cfg.Identity = "shoal-hub"
	}
	if cfg.ExplanationRate == 0 {
		cfg.ExplanationRate = 200
	}
	if cfg.ExplanationBurst <= 0 {
		cfg.ExplanationBurst = 1000
	}
	explainLimit := rate.NewLimiter(rate.Limit(cfg.ExplanationRate), cfg.ExplanationBurst)
	if cfg.ExplanationRate < 0 {
		explainLimit = rate.NewLimiter(rate.Inf, 0)
	}
	status := jobs.NewStatus(st)
	return &Scheduler{
		cfg:          cfg,
		st:           st,
		state:        store.NewLeaderState(st, Election, cfg.Identity),
		ledger:       ledger.New(st),
		jobs:         status.Reader(),
		status:       status,
		queues:       store.NewReader(st, queues.Kind, store.JSONCodec[*v1alpha1.Queue]()),
		queueStatus:  queues.NewStatusWriter(st),
		clusters:     registryClusters(st),
		leases:       registry.NewLeaseReader(st),
		inventories:  registryInventories(st),
		pools:        pools.NewReader(st),
		fair:         placement.NewFairShare(cfg.FairShareHalfLife),
		fairStore:    fairShareCollection(st),
		holdStore:    holdsCollection(st),
		explainLimit: explainLimit,
	}
}
