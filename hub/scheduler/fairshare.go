// SPDX-License-Identifier: Apache-2.0

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shoal-dev/shoal/federation/placement"
	"github.com/shoal-dev/shoal/hub/store"
)

// KindFairShare is the store kind of the scheduler's fair-share usage: one
// record, written only by this package, so that a restarted or new leader
// continues the decayed usage of every queue instead of starting from zero.
const KindFairShare = "fairshare"

// fairShareRecord names the one fair-share record.
const fairShareRecord = "usage"

func fairShareCollection(st *store.Store) *store.Collection[*placement.FairShareState] {
	return store.NewCollection(st, KindFairShare, store.JSONCodec[*placement.FairShareState]())
}

// restoreFairShare loads the usage and the head-of-queue reservations
// (holds.go) the last leader saved, once per leadership (nothing on a new
// hub).
func (s *Scheduler) restoreFairShare(ctx context.Context) error {
	if s.fairLoaded {
		return nil
	}
	if err := s.restoreHolds(ctx); err != nil {
		return err
	}
	st, _, err := s.fairStore.Get(ctx, fairShareRecord)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read fair-share usage: %w", err)
	default:
		s.fair.Restore(*st)
		s.fairSaved = st.Last
	}
	s.fairLoaded = true
	return nil
}

// saveFairShare stores the usage when FairShareSaveInterval has passed
// since the last save, guarded by the caller's leadership.
func (s *Scheduler) saveFairShare(ctx context.Context, held *store.Cond, now time.Time) error {
	if !s.fairSaved.IsZero() && now.Sub(s.fairSaved) < s.cfg.FairShareSaveInterval {
		return nil
	}
	st := s.fair.State()
	txn := s.st.Txn(ctx)
	if held != nil {
		txn.If(*held)
	}
	if _, err := txn.Then(s.fairStore.PutOp(fairShareRecord, &st)).Commit(); err != nil {
		return fmt.Errorf("save fair-share usage: %w", err)
	}
	s.fairSaved = now
	return nil
}
