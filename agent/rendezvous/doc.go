// SPDX-License-Identifier: Apache-2.0

// Package rendezvous mirrors, into the agent's workload cluster, the
// rendezvous Service and EndpointSlices the hub keeps for every job
// (docs/rendezvous.md), so that <job>-<index>.<job>.<namespace> resolves
// through the workload cluster's own DNS for every member of the gang,
// members of other clusters included.
//
// For every job with a member in this cluster (a managed local pod labelled
// with the job), the Mirror keeps, in the same namespace: a selectorless
// headless Service with the hub Service's name and ports, and one
// EndpointSlice per hub slice, with its name, address type, endpoints and
// ports, labelled endpointslice.kubernetes.io/managed-by: shoal-agent (the
// local endpointslice controller leaves it alone) and
// kubernetes.io/service-name. When the job has no local member left, or
// its hub Service is gone, the mirror is deleted.
//
// Hub Services and slices are read through an informer on the hub cluster
// (objects labelled with the job); the mirrors through an informer on the
// workload cluster (objects labelled with the job and managed=true), local
// members from the shared agent/cluster cache. A work queue keyed by job
// serialises each job's writes; a failed write is retried with backoff.
package rendezvous
