// Package rollout is the hub's side of GitOps: every cluster's GitOps source
// and last reported sync status, kept on the cluster's record in the store,
// and the rollout controller that moves a commit across the fleet in waves
// (planning and gating come from federation/rollout).
//
// Fleet holds the data path. An admin sets a cluster's source (SetSource;
// it drops any rollout pin). The cluster's agent reports its status
// (Report, from Clusters.ReportGitOpsStatus) and gets back the source to
// sync: the cluster's source with the defaults filled in and, while a
// rollout pins the cluster, Ref.Commit set to the pinned commit. Unchanged
// reports write nothing.
//
// Controller holds the rollouts (store kind "rollouts"). Create plans the
// waves over the selected clusters that have a source, remembers each one's
// current commit (its pin, else its applied commit) as the rollback target,
// pins the first wave, and freezes the later waves' clusters that follow a
// branch or tag at the commit they run, so that none moves to a newer head
// before its wave. While it leads the "rollouts" election, Run ticks every
// active rollout with every cluster's reported status and Ready state
// (Ready, Cordoned or Draining), pins the next wave when one passes, and
// pins a failed wave back to its previous commits. Each tick also repairs
// pins a rollout decided but could not write. Pins stay after a rollout
// ends; `shoal cluster gitops set` replaces them.
//
// The hub never holds Git credentials: a source names a Secret in the
// workload cluster, and a source whose URL carries a password or token is
// refused.
package rollout
