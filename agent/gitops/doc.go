// SPDX-License-Identifier: Apache-2.0

// Package gitops keeps a workload cluster equal to its Git source: it fetches
// the repository with fluxcd/pkg/git/gogit (shallow, cached between syncs),
// builds the path with fluxcd/pkg/kustomize, validates the whole revision by
// a server-side dry-run, applies it with fluxcd/pkg/ssa (server-side apply,
// field manager "shoal"), prunes what Shoal applied earlier and the revision
// dropped (inventory kept in a ConfigMap in the agent's namespace), corrects
// drift on every interval and waits for health with kstatus.
//
// A Syncer runs this loop (Run(ctx) error) and reports a
// v1alpha1.GitOpsStatus after every sync for the agent to send to the hub.
package gitops
