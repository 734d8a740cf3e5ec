// SPDX-License-Identifier: Apache-2.0

// Package hubcluster issues and revokes the hub-cluster credentials of
// workload-cluster agents.
//
// For a cluster <c> it keeps, in the hub management cluster: a ServiceAccount
// shoal-agent-<c> in shoal-system; the cluster's namespace shoal-c-<c>
// (v1alpha1.ClusterNamespace), where the hub writes the cluster's member
// pods, its jobs' rendezvous Services and EndpointSlices and its copies of
// the jobs' dependencies; RBAC scoped by namespace: in shoal-c-<c> only,
// pods (read, delete), their status, events, Services, EndpointSlices,
// ConfigMaps, Secrets and ServiceAccounts (read); in kube-node-lease only,
// leases; cluster-wide, virtual nodes by name and SubjectAccessReviews. A
// ValidatingAdmissionPolicy with its binding narrows every write of that
// ServiceAccount to the cluster's own objects: nodes named shoal-<c>-* that
// carry the label shoal.dev/cluster=<c>, their leases in kube-node-lease, and
// pods whose spec.nodeName is one of those nodes. So an agent reads no other
// cluster's members and no tenant data outside its namespace
// (docs/security.md). The kubeconfig handed to the
// agent carries a bounded TokenRequest token; the agent refreshes it itself
// before it expires (it may create tokens for its own ServiceAccount only).
package hubcluster
