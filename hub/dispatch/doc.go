// SPDX-License-Identifier: Apache-2.0

// Package dispatch materialises placed gangs in the hub management cluster
// in two phases, and follows them to the end.
//
// For a job the scheduler booked (phase Placed, a ledger reservation of the
// job's epoch) the dispatcher creates one hub pod per member, bound to the
// member's virtual node (spec.nodeName) and carrying its target node, the
// epoch and the rendezvous environment. The agent of each cluster creates
// the local pod behind a shoal.dev/gang scheduling gate, checks that it
// fits and reports the pod condition shoal.dev/Prepared. When every member
// is Prepared before the prepare deadline the dispatcher records the commit
// in the job (status.dispatch phase Committed, Dispatched=True) and then
// stamps shoal.dev/commit=<epoch> on every member; agents lift their gates
// and the workload clusters' kube-schedulers bind. When a member fails to
// prepare, or the deadline passes, it records the abort (phase Aborting
// with the reason in status.dispatch.reason, Dispatched=False), deletes
// every member, and once none is left releases the reservation and
// requeues the job with backoff (annotation shoal.dev/not-before).
//
// The decision is written to the store before it is acted on, so a hub
// that restarts mid-dispatch finishes what was decided: re-stamping commit
// on every member, or deleting every member. It never ends half committed.
//
// A committed gang has until its start deadline (Config.StartTimeout after
// the commit, default 5m) to be fully Running; one that is not (a member's
// GPUs were taken locally after its prepare, its node went away) is aborted
// the same way, whole, with reason StartTimeout naming the members and
// clusters that did not start: requeued with the abort backoff, not counted
// as a restart. Run arms a timer at the earliest pending deadline, so the
// abort does not wait for the next interval.
//
// Afterwards the dispatcher aggregates member phases into the job (Running
// when every member runs, Succeeded when all succeeded), restarts the
// whole gang when a member fails (up to failurePolicy.maxRestarts), removes
// every member of a cancelled job, and stops a preempted job's members with
// its grace period before requeueing it.
//
// A gang with a member on a drained cluster or node (the registry's
// spec.drain and spec.drainedNodes, read each pass) is aborted whole with
// reason Drained, its members stopped with the job's preemption grace, and
// requeued at once: no backoff, not a restart (drain.go).
//
// # Shape
//
// One reconciler, in the shape of cluster-api's: a pass (reconcile.go)
// reads each job (a store.Reader; hub/jobs is the only writer of Job
// status) with its reservation and its member pods from an informer cache
// (pods.go), runs the phases in order (observe, preemption, drain, decide,
// prepare, follow, finish) which only decide, writes the job once through
// hub/jobs (status.go), then acts (act.go: create members, stamp the
// commit, delete members, release the reservation with the job's requeue
// or failure in one transaction). A pass that wrote the job leaves the
// release to the next one, so a job is written at most once per pass.
package dispatch
