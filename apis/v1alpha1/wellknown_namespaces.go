// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "strings"

// clusterNamespacePrefix starts the hub-cluster namespace of each member
// cluster.
const clusterNamespacePrefix = "shoal-c-"

// ClusterNamespace is the hub-cluster namespace of the members placed on
// cluster (shoal-c-<cluster>), the way Karmada gives each member cluster an
// execution namespace: the hub writes there the cluster's member pods, the
// rendezvous Services and EndpointSlices of its jobs and copies of their
// dependencies, and the cluster's agent may read and write there only
// (hub/hubcluster). A cluster name the hub accepts (a DNS label of at most
// 51 characters, hubcluster.CheckName) always makes a valid namespace name
// (at most 59 characters).
func ClusterNamespace(cluster string) string { return clusterNamespacePrefix + cluster }

// IsClusterNamespace says whether ns is a cluster's hub namespace
// (ClusterNamespace): the hub acts on member pods, rendezvous objects and
// copies in those only, never on a labelled object elsewhere.
func IsClusterNamespace(ns string) bool {
	return strings.HasPrefix(ns, clusterNamespacePrefix) && len(ns) > len(clusterNamespacePrefix)
}
