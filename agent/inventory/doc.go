// SPDX-License-Identifier: Apache-2.0

// Package inventory turns the agent's own cluster, as the shared cache of
// agent/cluster holds it, into federation/inventory.Cluster reports: rebuilt
// from the cache (never by relisting the cluster), rate limited,
// generation-numbered and published only when the content changed.
package inventory
