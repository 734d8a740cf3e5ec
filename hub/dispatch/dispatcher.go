// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/registry"
	"github.com/shoal-dev/shoal/hub/store"
)

// Election is the store election Run campaigns in alone. The hub runs
// Lead under its one leadership instead (hub/app), whose leader also wins
// this election so that no older replica dispatches beside it.
const Election = "dispatch"

// DefaultFinishedRetention is shoal-hub's --finished-member-retention.
const DefaultFinishedRetention = time.Hour

// DefaultResync is Config.Resync's default. Every job with a reservation
// is read from the store at each sweep (two reads each): in make
// bench-scale at F-XL with 20,000 placed gangs a sweep every 30 s made
// 223,000 store reads in under four minutes.
const DefaultResync = 5 * time.Minute

// DefaultStartTimeout is Config.StartTimeout's default.
const DefaultStartTimeout = 5 * time.Minute

// Config configures a Dispatcher.
type Config struct {
	// Identity names this replica in the election.
	Identity string
	// Namespace is the users' namespace of the hub cluster, where the
	// ConfigMaps, Secrets and ServiceAccounts jobs reference are created
	// (docs/dependencies.md); default v1alpha1.MemberNamespace
	// ("shoal-jobs"). Member pods live in their cluster's namespace
	// (v1alpha1.ClusterNamespace), with their jobs' rendezvous objects and
	// the hub's copies of those dependencies.
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
	// member may hang before it is deleted with grace 0, when its
	// cluster's agent has reached the hub since the deletion was asked (the
	// hang is then in the workload cluster); default 30s. A member on a
	// cluster silent since waits until the cluster is Lost, when the
	// agent's fence has stopped it (fencewait.go).
	ForceDeleteAfter time.Duration
	// FinishedRetention is how long a finished job keeps its ended members'
	// pods (and their logs) on the hub and in the workload clusters; 0
	// deletes them at once. Running members of a failed or cancelled job
	// are stopped either way.
	FinishedRetention time.Duration
	// Interval is how often the clusters are read (drains, Lost and
	// NotReady clusters, each agent's last contact); default 1s. Jobs are
	// reconciled when they, their reservations or their members change and
	// at their own deadlines, not on the interval.
	Interval time.Duration
	// Resync is the longest time between sweeps, each of which queues
	// every job with a reservation or members and removes orphaned
	// rendezvous objects and dependency copies: the safety net for a
	// change no event announced. A sweep also runs at the start of a
	// leadership, after a watch error and when a cluster's drain or state
	// changes; default DefaultResync.
	Resync time.Duration
	// Workers is how many jobs are reconciled at once (never one job by
	// two); default DefaultWorkers.
	Workers int
	// MaxPreparingMembers bounds the members of the gangs preparing at
	// once; a placed gang beyond it keeps its reservation and waits, in
	// line, for the gangs before it to commit or abort (admit.go). A gang
	// larger than the bound starts when no other is preparing. Default
	// DefaultMaxPreparingMembers.
	MaxPreparingMembers int
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
	// queues is the queue records, read for the pod-security level stamped
	// on member pods.
	queues store.Reader[*v1alpha1.Queue]
	// clusters is the registry's cluster records, read for drains, and
	// leases their heartbeats' leases (registry.Lease), read with them for
	// the agents' last contact with the hub cluster.
	clusters store.Reader[*v1alpha1.Cluster]
	leases   store.Reader[*registry.Lease]
	// pods is the member pod cache of the current leadership (Start).
	pods *memberPods
	// nsReady holds the namespaces known to exist, under nsMu.
	nsMu    sync.Mutex
	nsReady map[string]bool
	// wake is the earliest deadline the last Pass found pending (zero:
	// none).
	wake time.Time
	// wakes are the deadlines pending per job while Lead runs; it
	// reconciles a job again at its own.
	wakes wakes
	// view is the clusters as the last sweep read them.
	view clusterView
	// memberWrites is when Lead last wrote each job's member phases
	// (deferMembers), by job name.
	memberWrites sync.Map
	// sliceWrites is when Lead last wrote each job's rendezvous
	// EndpointSlices (deferSlices), by job name.
	sliceWrites sync.Map
	// held is the guard of the leadership Run holds (nil: none, Pass
	// driven by hand): leadership.go.
	held *store.Cond
	// state is this replica's standing in the election, for readiness.
	state *store.LeaderState
	// admit bounds the gangs preparing at once (admit.go).
	admit *admission
	// resNames is the current leadership's set of the jobs holding a
	// reservation (nil: none, Pass driven by hand): resnames.go.
	resNames atomic.Pointer[reservationNames]
}

// State is the dispatcher's standing in its election: leading and synced
// once a pass of the current leadership completed on synced member pod
// caches (the readiness check dispatch-synced).
func (d *Dispatcher) State() *store.LeaderState { return d.state }

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
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxPreparingMembers <= 0 {
		cfg.MaxPreparingMembers = DefaultMaxPreparingMembers
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Identity == "" {
		cfg.Identity = "shoal-hub"
	}
	status := jobs.NewStatus(st)
	return &Dispatcher{cfg: cfg, st: st, hub: hub, ledger: ledger.New(st), jobs: status.Reader(), status: status, nsReady: map[string]bool{},
		queues:   store.NewReader(st, queues.Kind, store.JSONCodec[*v1alpha1.Queue]()),
		clusters: store.NewReader(st, registry.KindClusters, store.JSONCodec[*v1alpha1.Cluster]()),
		leases:   registry.NewLeaseReader(st),
		state:    store.NewLeaderState(st, Election, cfg.Identity), admit: newAdmission(cfg.MaxPreparingMembers)}
}

// Start starts the member pod cache (shared informers on the hub pods of
// every namespace labelled with the job, their rendezvous objects, and the
// dependencies in Namespace with their copies), which runs until ctx ends. Run starts
// one per leadership; call Start before driving Pass by hand.
func (d *Dispatcher) Start(ctx context.Context) {
	d.pods = newMemberPods(d.hub, d.cfg.Namespace)
	d.pods.start(ctx)
}
