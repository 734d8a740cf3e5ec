// Package rollout is the hub's side of GitOps: every cluster's GitOps source
// and last reported sync status, kept on the cluster's record in the store,
// and the rollout controller that moves a commit across the fleet in waves
// (planning and gating come from federation/rollout).
//
// The hub never holds Git credentials: a source names a Secret in the
// workload cluster, and a source whose URL carries a password or token is
// refused.
package rollout
