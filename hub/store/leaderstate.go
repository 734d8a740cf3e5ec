// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// LeaderState follows one leader-elected part of a replica for its
// readiness check: whether this replica leads the election and whether the
// part, leading, has done its first complete round on the store (a
// scheduling cycle, a dispatch pass), so that /readyz tells a leader that
// acts from one that has only won. Safe for concurrent use.
type LeaderState struct {
	election string
	identity string
	st       *Store

	mu       sync.Mutex
	leading  bool
	synced   bool
	revision int64
	lastErr  error
}

// NewLeaderState returns the state of election on st, not leading, for
// the replica that campaigns as identity.
func NewLeaderState(st *Store, election, identity string) *LeaderState {
	return &LeaderState{st: st, election: election, identity: identity}
}

// Lead records that this replica won the election at revision; the part
// is not synced until Synced.
func (s *LeaderState) Lead(revision int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leading, s.synced, s.revision, s.lastErr = true, false, revision, nil
}

// Synced records a complete round of the leading part (err nil), or why
// the last round failed: a leader that has synced once stays synced.
func (s *LeaderState) Synced(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.leading {
		return
	}
	s.lastErr = err
	if err == nil {
		s.synced = true
	}
}

// Lost records the end of the leadership.
func (s *LeaderState) Lost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leading, s.synced, s.lastErr = false, false, nil
}

// ErrLeaderNotSynced means this replica leads but has not completed a
// round yet.
var ErrLeaderNotSynced = errors.New("leading, but no complete round yet")

// Check is the readiness check of the part: nil on a follower and on a
// synced leader, ErrLeaderNotSynced (with the last round's error) on a
// leader that has not synced yet. The message says which it is: "leading
// since revision N", "following <identity>" or "no leader elected".
func (s *LeaderState) Check(ctx context.Context) (string, error) {
	s.mu.Lock()
	leading, synced, rev, lastErr := s.leading, s.synced, s.revision, s.lastErr
	s.mu.Unlock()
	if leading {
		if !synced {
			if lastErr != nil {
				return "", fmt.Errorf("%w (since revision %d): %v", ErrLeaderNotSynced, rev, lastErr)
			}
			return "", fmt.Errorf("%w (since revision %d)", ErrLeaderNotSynced, rev)
		}
		return fmt.Sprintf("leading since revision %d", rev), nil
	}
	who, err := s.st.Leader(ctx, s.election)
	switch {
	case errors.Is(err, ErrNoLeader):
		return "no leader elected", nil
	case err != nil:
		return "", err
	case who == s.identity && s.identity != "":
		// Won, and the part has not started its term yet (or has just
		// ended it): not a follower, and not acting either.
		return "", fmt.Errorf("%w: this replica (%s) won the election; the part has not started", ErrLeaderNotSynced, who)
	}
	return "following " + who, nil
}
