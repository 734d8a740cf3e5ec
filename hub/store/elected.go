// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// campaignRetry is how long RunElected waits after a failed campaign.
const campaignRetry = time.Second

// resignTimeout bounds the resignation after a term, which runs even when
// the caller's ctx has ended.
const resignTimeout = 5 * time.Second

// LeaderFunc is the work of one term of leadership. Its ctx ends when the
// leadership is lost or RunElected's ctx ends; it should run until then.
// Every write it makes should carry l.Held() as a guard.
type LeaderFunc func(ctx context.Context, l Leadership) error

// RunElected is the loop of a leader-elected part of the hub: it campaigns
// for election as identity, runs fn while it leads (fn's ctx is cancelled
// as soon as leadership is lost), resigns when fn returns so that a standby
// takes over at once, and campaigns again. A failed campaign is retried
// after a second. It returns nil when ctx ends, and fn's error (after
// resigning) when fn fails on its own while it still leads.
func (s *Store) RunElected(ctx context.Context, election, identity string, fn LeaderFunc) error {
	return s.RunElectedAll(ctx, identity, fn, election)
}

// RunElectedAll is RunElected for a leadership of every one of elections
// (CampaignAll): fn runs only while identity leads them all, and its
// writes carry the primary election's guard.
func (s *Store) RunElectedAll(ctx context.Context, identity string, fn LeaderFunc, elections ...string) error {
	election := strings.Join(elections, ",")
	log := klog.FromContext(ctx).WithValues("election", election, "identity", identity)
	for ctx.Err() == nil {
		l, err := s.CampaignAll(ctx, identity, elections...)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Error(err, "Campaign failed; retrying", "after", campaignRetry)
			select {
			case <-ctx.Done():
			case <-time.After(campaignRetry):
			}
			continue
		}
		log.Info("Leading", "revision", l.Revision())
		lost, err := lead(ctx, l, fn)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
		if rerr := l.Resign(rctx); rerr != nil && !lost {
			log.V(2).Info("Resign failed; the lease expires instead", "err", rerr)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("store: leader of election %s: %w", election, err)
		}
		if lost {
			log.Info("Leadership lost")
		}
	}
	return nil
}

// lead runs fn with a ctx that ends with ctx or with l. It reports whether
// l was lost (or ctx ended) while fn ran, and fn's error when it was not.
func lead(ctx context.Context, l Leadership, fn LeaderFunc) (lost bool, err error) {
	lctx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-l.Done():
			cancel()
		case <-lctx.Done():
		}
	}()
	err = fn(lctx, l)
	lost = lctx.Err() != nil
	cancel()
	<-watched
	if lost {
		return ctx.Err() == nil, nil
	}
	return false, err
}
