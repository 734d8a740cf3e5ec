// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"errors"

	"github.com/shoal-dev/shoal/hub/scheduler"
	"github.com/shoal-dev/shoal/hub/store"
)

// besideScheduler runs each of runs beside the scheduler, in the
// scheduler's leadership term: one replica, the one that leads, runs them
// (the retention sweeper, the inference and pools controllers). A replica
// that runs no scheduler runs none of them.
func besideScheduler(parts []leaderPart, runs ...store.LeaderFunc) []leaderPart {
	for i, p := range parts {
		if p.legacyElection != scheduler.Election {
			continue
		}
		lead := p.lead
		parts[i].lead = func(ctx context.Context, l store.Leadership) error {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, len(runs))
			for _, r := range runs {
				go func() { done <- r(ctx, l) }()
			}
			err := lead(ctx, l)
			cancel()
			all := []error{err}
			for range runs {
				all = append(all, <-done)
			}
			return errors.Join(all...)
		}
	}
	return parts
}
