// SPDX-License-Identifier: Apache-2.0

package main

import (
	"github.com/spf13/pflag"

	"github.com/shoal-dev/shoal/hub/app"
)

// addRetentionFlags adds the flags of finished-job retention and of the
// embedded etcd's maintenance (docs/retention.md).
func addRetentionFlags(fs *pflag.FlagSet, c *app.Config) {
	fs.DurationVar(&c.Retention.TTL, "finished-job-ttl", c.Retention.TTL,
		"how long a finished job (Succeeded, Failed, Cancelled) is kept after it finished before the leader deletes it with its records, "+
			"unless its spec.ttlSecondsAfterFinished says otherwise; 0 keeps jobs without that field")
	fs.IntVar(&c.Retention.MaxCount, "finished-job-max-count", c.Retention.MaxCount,
		"the most finished jobs kept; beyond it the ones that finished first are deleted, whatever their TTL; 0: no limit")
	fs.DurationVar(&c.Retention.Interval, "finished-job-sweep-interval", 0, "how often the leader looks for finished jobs to delete (default 1m)")
	fs.DurationVar(&c.Embedded.CompactionRetention, "etcd-compaction-retention", 0,
		"how much history the embedded etcd keeps for watches and continued lists before it compacts it (default 5m)")
	fs.DurationVar(&c.Defrag.Interval, "etcd-defrag-interval", c.Defrag.Interval,
		"how often the embedded etcd's database file is defragmented (when a tenth or more of it is free), returning the space compactions freed; 0: never")
}

var retentionFlagNames = map[string]string{
	"Retention.TTL": "--finished-job-ttl", "Retention.MaxCount": "--finished-job-max-count",
	"Defrag.Interval": "--etcd-defrag-interval",
}
