// Package scheduler is the hub's global gang scheduler loop. One hub
// replica at a time (elected with store.Campaign) runs it: each cycle reads
// the ledger, the jobs, the queues and the clusters' latest inventories at
// the store, hands them to federation/placement, and books every placed
// gang in one store transaction guarded by the job's revision, the ledger's
// per-cluster booking counters and the leader's key (see hub/ledger). A
// booked job becomes Placed with a new placement epoch and its members'
// targets; a job that waits carries the placement engine's explanation as
// its Placed=False condition; a preemption victim gets a Preempted
// condition that hub/dispatch acts on.
//
// Cycles run on an interval and whenever jobs, reservations or inventories
// change. Time comes from an injected clock.
package scheduler
