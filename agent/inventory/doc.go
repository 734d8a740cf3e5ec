// Package inventory watches the agent's own cluster (shared informers on
// Nodes and Pods) and turns it into federation/inventory.Cluster reports:
// rebuilt from the informer caches (never by relisting the cluster), rate
// limited, generation-numbered and published only when the content changed.
package inventory
