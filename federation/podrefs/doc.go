// SPDX-License-Identifier: Apache-2.0

// Package podrefs finds the namespaced objects a pod spec needs in its own
// namespace before it can start: the ConfigMaps, Secrets and ServiceAccount
// its containers, volumes and image pulls name. The hub checks them at
// submit (they must exist in the member namespace of the hub cluster) and
// the agent copies them into its workload cluster before it creates a
// member's local pod; both walk a spec with References, so they cannot
// disagree on what a template needs (docs/dependencies.md).
package podrefs
