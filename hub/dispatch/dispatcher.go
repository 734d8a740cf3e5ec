// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// Election is the store election dispatcher replicas campaign in.
const Election = "dispatch"

// DefaultFinishedRetention is shoal-hub's --finished-member-retention.
const DefaultFinishedRetention = time.Hour

// DefaultStartTimeout is Config.StartTimeout's default.
const DefaultStartTimeout = 5 * time.Minute

// Config configures a Dispatcher.
type Config struct {
	// Identity names this replica in the election.
	Identity string
	// Namespace of the member pods in the hub cluster; default
	// v1alpha1.MemberNamespace ("shoal-jobs").
	Namespace string
	// PrepareTimeout is how long every member has to be Prepared; default 30s.
	PrepareTimeout time.Duration
	// StartTimeout is how long after the commit every member has to be
	// Running; a gang that is not is torn down whole and requeued with
	// reason StartTimeout and the abort backoff (not a restart); default
	// DefaultStartTimeout. It includes pulling the image on the node.
	StartTimeout time.Duration
	// Backoff is the first requeue delay after an abort; it doubles per
	// abort up to MaxBackoff. Defaults 2s and 5m.
	Backoff, MaxBackoff time.Duration
	// ForceDeleteAfter is how long past its grace period a terminating
	// member may hang (its agent gone) before it is deleted with grace 0;
	// default 30s.
	ForceDeleteAfter time.Duration
	// FinishedRetention is how long a finished job keeps its ended members'
	// pods (and their logs) on the hub and in the workload clusters; 0
	// deletes them at once. Running members of a failed or cancelled job
	// are stopped either way.
	FinishedRetention time.Duration
	// Interval is the longest time between passes; default 1s.
	Interval time.Duration
	// Clock is the time source; default the real clock.
	Clock clock.WithTicker
}

// Dispatcher runs the two-phase dispatch and the job lifecycle. It reads
// jobs and asks hub/jobs for every status change; it owns the hub member
// pods (create, commit stamp, delete) and marks reservations started and
// released through hub/ledger.
type Dispatcher struct {
	cfg    Config
	st     *store.Store
	hub    kubernetes.Interface
	ledger *ledger.Ledger
	jobs   store.Reader[*v1alpha1.Job]
	status *jobs.Status
	// clusters is the registry's cluster records, read for drains.
	clusters store.Reader[*v1alpha1.Cluster]
	// pods is the member pod cache of the current leadership (Start).
	pods *memberPods
	// nsReady is set once the member namespace exists (Run's goroutine only).
	nsReady bool
	// wake is the earliest deadline the last Pass found pending (zero:
	// none); Run passes again at it.
	wake time.Time
}

// New returns a dispatcher that keeps state in st and member pods in the
// hub cluster behind hub.
func New(st *store.Store, hub kubernetes.Interface, cfg Config) *Dispatcher {
	if cfg.Namespace == "" {
		cfg.Namespace = v1alpha1.MemberNamespace
	}
	if cfg.PrepareTimeout <= 0 {
		cfg.PrepareTimeout = 30 * time.Second
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Minute
	}
	if cfg.ForceDeleteAfter <= 0 {
		cfg.ForceDeleteAfter = 30 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Identity == "" {
		cfg.Identity = "shoal-hub"
	}
	status := jobs.NewStatus(st)
	return &Dispatcher{cfg: cfg, st: st, hub: hub, ledger: ledger.New(st), jobs: status.Reader(), status: status,
		clusters: store.NewReader(st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]())}
}

// Start starts the member pod cache (a shared informer on the hub pods of
// Namespace labelled with the job), which runs until ctx ends. Run starts
// one per leadership; call Start before driving Pass by hand.
func (d *Dispatcher) Start(ctx context.Context) {
	d.pods = newMemberPods(d.hub, d.cfg.Namespace)
	d.pods.start(ctx)
}
