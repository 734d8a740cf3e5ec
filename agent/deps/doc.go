// SPDX-License-Identifier: Apache-2.0

// Package deps keeps, in the agent's workload cluster, copies of the
// ConfigMaps, Secrets and ServiceAccounts that its members reference
// (federation/podrefs walks the local pod's spec), read from the same
// namespace of the hub cluster (docs/dependencies.md).
//
// Ensure, asked by the pod syncer (agent/podsync) before it creates a
// member's local pod, creates or updates each copy, labelled
// v1alpha1.LabelCopy and app.kubernetes.io/managed-by=shoal-agent and
// annotated with the owning jobs and the hub object's UID and
// resourceVersion. A same-named object without the label is never
// touched: the member is refused (podsync.RefusedError, reason
// DependencyConflict), as it is when a required object is missing on the
// hub (DependencyMissing) or is a service-account token Secret
// (DependencyNotCarried). A ServiceAccount copy is a plain ServiceAccount
// (automountServiceAccountToken only; no secrets, no imagePullSecrets: the
// pod carries its own).
//
// Run keeps the copies in step while members run: one watch per referenced
// hub object (a field selector on its name, so only the referenced names
// are read) updates the copy on every change, and records an event on the
// members when the hub object is deleted (the copy is kept for the running
// members). A copy that no local member and no member being created
// references any more is deleted, and so are the watches.
package deps
