// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// finishedPhases are the terminal phases, whose jobs retention deletes.
var finishedPhases = []v1alpha1.JobPhase{v1alpha1.JobSucceeded, v1alpha1.JobFailed, v1alpha1.JobCancelled}

var retentionDeleted = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "shoal_jobs_retention_deleted_total",
	Help: "Finished jobs the retention sweeper deleted (TTL ran out or over the count limit).",
})

// sweepBatch is how many jobs one retention transaction deletes (two
// operations each: under etcd's default limit of 128 per transaction).
const sweepBatch = 50

// RetentionConfig says how long finished jobs are kept.
type RetentionConfig struct {
	// TTL is how long a finished job is kept after its completion time
	// when its spec sets no ttlSecondsAfterFinished; 0 keeps it (unless
	// MaxCount removes it).
	TTL time.Duration
	// MaxCount is the most finished jobs kept; beyond it the ones that
	// finished first are deleted, whatever their TTL. 0: no limit.
	MaxCount int
	// Interval between sweeps; default one minute.
	Interval time.Duration
	// Clock tells the time and ticks the interval (tests); default the
	// real clock.
	Clock clock.WithTicker
}

// Retention deletes finished jobs once their TTL ran out or when more
// than MaxCount are kept. It decides on the list index (no job is
// decoded) and runs on the leader only.
type Retention struct {
	svc *Service
	ix  *ListIndex
	cfg RetentionConfig
}

// NewRetention returns the sweeper of svc's jobs, deciding on ix (the
// index svc lists from, whose Run the caller runs).
func NewRetention(svc *Service, ix *ListIndex, cfg RetentionConfig) *Retention {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Retention{svc: svc, ix: ix, cfg: cfg}
}

// Run sweeps every interval until ctx ends.
func (r *Retention) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("retention")
	t := r.cfg.Clock.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		n, err := r.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error(err, "Deleting finished jobs", "deleted", n)
		case n > 0:
			log.V(2).Info("Deleted finished jobs", "deleted", n)
		}
	}
}

// Sweep deletes the finished jobs due now and returns how many it deleted.
// It does nothing until the index holds every job.
func (r *Retention) Sweep(ctx context.Context) (int, error) {
	if err := r.ix.fresh(ctx); err != nil {
		if notFresh(err) {
			return 0, nil
		}
		return 0, err
	}
	due := r.ix.expired(r.cfg.Clock.Now(), r.cfg.TTL, r.cfg.MaxCount)
	n, err := r.svc.deleteExpired(ctx, due)
	retentionDeleted.Add(float64(n))
	return n, err
}

// expired is a finished job due for deletion, at the revision it was seen.
type expired struct {
	name string
	rev  int64
}

// expired returns the finished jobs due at now: those whose TTL (their
// own, else ttl when not 0) ran out, and the earliest finished beyond
// maxCount (when not 0).
func (ix *ListIndex) expired(now time.Time, ttl time.Duration, maxCount int) []expired {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var kept []*indexEntry
	var out []expired
	for _, p := range finishedPhases {
		for name := range ix.byPhase[string(p)] {
			e := ix.entries[name]
			if due(e, now, ttl) {
				out = append(out, expired{name: name, rev: e.rev})
			} else {
				kept = append(kept, e)
			}
		}
	}
	if maxCount > 0 && len(kept) > maxCount {
		slices.SortFunc(kept, func(a, b *indexEntry) int {
			if c := a.finished.Compare(b.finished); c != 0 {
				return c
			}
			return compareStrings(a.name, b.name)
		})
		for _, e := range kept[:len(kept)-maxCount] {
			out = append(out, expired{name: e.name, rev: e.rev})
		}
	}
	slices.SortFunc(out, func(a, b expired) int { return compareStrings(a.name, b.name) })
	return out
}

// due reports whether a finished job's TTL ran out at now.
func due(e *indexEntry, now time.Time, ttl time.Duration) bool {
	if e.ttl != nil {
		ttl = time.Duration(*e.ttl) * time.Second
	} else if ttl <= 0 {
		return false
	}
	return !e.finished.IsZero() && !now.Before(e.finished.Add(ttl))
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
