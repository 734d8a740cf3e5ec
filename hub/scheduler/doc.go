// SPDX-License-Identifier: Apache-2.0

// Package scheduler is the hub's global gang scheduler loop. One hub
// replica at a time (elected with store.Campaign) runs it: each cycle reads
// the ledger, the jobs, the queues and the clusters' latest inventories at
// the store, hands them to federation/placement, and books every placed
// gang in one store transaction guarded by the job's revision, the ledger's
// per-cluster booking counters and the leader's key (see hub/ledger). The
// scheduler reads jobs, queues, clusters and inventories through
// store.Readers and asks hub/jobs for every job change: a booked job
// becomes Placed with a new placement epoch and its members' targets
// (jobs.Book, in the booking's transaction); a job that waits carries the
// placement engine's explanation as its Placed=False condition
// (jobs.Explain); a preemption victim gets a Preempted condition that
// hub/dispatch acts on (jobs.MarkPreempted). Queue quotas go to the engine
// keyed by GPU class, as the API keys them; usage is the ledger's
// reservations in the snapshot. After each cycle the scheduler asks
// hub/queues to record every queue's status (pending and active jobs, GPUs
// held and borrowed per class) where it changed in meaning
// (queues.StatusWriter).
//
// Cycles run on an interval and whenever jobs, reservations or inventories
// change. Time comes from an injected clock.
package scheduler
