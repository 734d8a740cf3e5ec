// SPDX-License-Identifier: Apache-2.0

// Package rollout is the hub's rollout controller: it moves a GitOps commit
// across the fleet in waves (planning and gating come from
// federation/rollout). It is the only writer of the "rollouts" kind, whose
// records are the apis/v1alpha1.Rollout the API serves; the wave state lives
// in the Rollout's status.
//
// Cluster records belong to hub/registry: the controller reads the clusters
// through the registry (ListClusters) and asks it for pins (PinGitOps). The
// registry also stores the source an admin sets and the status agents
// report, and answers each report with the source to sync.
//
// Create plans the waves over the selected clusters that have a source,
// remembers each one's current commit (its pin, else its applied commit) as
// the rollback target, pins the first wave, and freezes the later waves'
// clusters that follow a branch or tag at the commit they run, so that none
// moves to a newer head before its wave. While it leads the "rollouts"
// election, Run ticks every active rollout with every cluster's reported
// status and Ready state (Ready, Cordoned or Draining), pins the next wave
// when one passes, and pins a failed wave back to its previous commits. Each
// tick also repairs pins a rollout decided but could not write. Pins stay
// after a rollout ends; `shoal cluster gitops set` replaces them.
package rollout
