// SPDX-License-Identifier: Apache-2.0

// Package hubcluster issues and revokes the hub-cluster credentials of
// workload-cluster agents.
//
// For a cluster <c> it keeps, in the hub management cluster: a ServiceAccount
// shoal-agent-<c> in shoal-system, RBAC to run virtual-kubelet nodes (nodes,
// node status, node leases, pods bound to them, their status, events), and a
// ValidatingAdmissionPolicy with its binding that narrows every write of that
// ServiceAccount to the cluster's own objects: nodes named shoal-<c>-* that
// carry the label shoal.dev/cluster=<c>, their leases in kube-node-lease, and
// pods whose spec.nodeName is one of those nodes. The kubeconfig handed to the
// agent carries a bounded TokenRequest token; the agent refreshes it itself
// before it expires (it may create tokens for its own ServiceAccount only).
package hubcluster
