// SPDX-License-Identifier: Apache-2.0

package app

import (
	"context"
	"time"

	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/store"
)

// Defaults of the retention and store-maintenance flags (docs/retention.md).
const (
	// DefaultFinishedJobTTL keeps a finished job a week.
	DefaultFinishedJobTTL = 7 * 24 * time.Hour
	// DefaultFinishedJobMaxCount keeps at most 50,000 finished jobs.
	DefaultFinishedJobMaxCount = 50_000
	// DefaultDefragInterval defragments the embedded etcd once a day.
	DefaultDefragInterval = 24 * time.Hour
)

// validateRetention checks the retention and defragmentation settings.
func (c *Config) validateRetention() error {
	switch {
	case c.Retention.TTL < 0:
		return &ConfigError{Fields: []string{"Retention.TTL"}, format: "%s %s: want 0 (keep) or more", args: []any{c.Retention.TTL}}
	case c.Retention.MaxCount < 0:
		return &ConfigError{Fields: []string{"Retention.MaxCount"}, format: "%s %d: want 0 (no limit) or more", args: []any{c.Retention.MaxCount}}
	case c.Defrag.Interval < 0:
		return &ConfigError{Fields: []string{"Defrag.Interval"}, format: "%s %s: want 0 (off) or more", args: []any{c.Defrag.Interval}}
	}
	return nil
}

// withRetention runs the retention sweeper of js beside the scheduler, in
// the scheduler's leadership term: one replica deletes finished jobs, the
// one that leads. A replica that runs no scheduler runs no sweeper.
func withRetention(parts []leaderPart, js *jobs.Service, ix *jobs.ListIndex, cfg jobs.RetentionConfig) []leaderPart {
	r := jobs.NewRetention(js, ix, cfg)
	return besideScheduler(parts, func(ctx context.Context, _ store.Leadership) error { return r.Run(ctx) })
}
