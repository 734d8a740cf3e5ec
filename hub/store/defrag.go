// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Size returns the embedded etcd's database size in bytes, allocated and in
// use (after a compaction, freed pages count in the first until a
// Defragment returns them to the file system). It commits etcd's pending
// batch first: the backend's sizes change only when a batch commits (every
// 100 ms), so without it writes made just before read as not there yet.
func (s *Store) Size(ctx context.Context) (allocated, inUse int64, err error) {
	if s.server == nil {
		return 0, 0, errors.New("store: Size needs the embedded etcd")
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	be := s.server.Server.Backend()
	be.ForceCommit()
	return be.Size(), be.SizeInUse(), nil
}

// Defragment rewrites the embedded etcd's database file without the pages
// that compactions freed, so the file shrinks to what is in use. etcd
// blocks reads and writes while it runs (9.3 s for a 443 MB file with 377 MB
// in use, under the scale harness's F-XL load: docs/retention.md); the hub
// runs it rarely (DefragConfig). With external etcd, defragment its members
// with etcdctl defrag instead.
func (s *Store) Defragment(ctx context.Context) error {
	if s.server == nil {
		return errors.New("store: Defragment needs the embedded etcd; run etcdctl defrag on external etcd")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The server's own call: the in-process client's maintenance adapter
	// cannot defragment (it has no health notifier).
	return s.server.Server.Defragment()
}

// DefragConfig schedules Defragment.
type DefragConfig struct {
	// Interval between defragmentations; 0 turns them off.
	Interval time.Duration
	// MinFreeRatio skips a defragmentation that would free less than this
	// share of the file (0.1: a tenth); default 0.1.
	MinFreeRatio float64
	// Clock ticks the interval (tests); default the real clock.
	Clock clock.WithTicker
}

// RunDefrag defragments the embedded etcd every cfg.Interval, when enough
// of its file is free, until ctx ends. It does nothing with external etcd
// or a zero interval.
func (s *Store) RunDefrag(ctx context.Context, cfg DefragConfig) error {
	if s.server == nil || cfg.Interval <= 0 {
		return nil
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.MinFreeRatio == 0 {
		cfg.MinFreeRatio = 0.1
	}
	t := cfg.Clock.NewTicker(cfg.Interval)
	defer t.Stop()
	log := klog.FromContext(ctx).WithName("defrag")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if err := s.defragOnce(ctx, cfg.MinFreeRatio); err != nil && ctx.Err() == nil {
			log.Error(err, "Defragmenting the embedded etcd")
		}
	}
}

// defragOnce defragments when at least minFree of the file is free.
func (s *Store) defragOnce(ctx context.Context, minFree float64) error {
	before, inUse, err := s.Size(ctx)
	if err != nil || before == 0 || float64(before-inUse)/float64(before) < minFree {
		return err
	}
	start := time.Now()
	if err := s.Defragment(ctx); err != nil {
		return err
	}
	after, _, err := s.Size(ctx)
	klog.FromContext(ctx).Info("Defragmented the embedded etcd", "before", before, "after", after, "took", time.Since(start))
	return err
}
