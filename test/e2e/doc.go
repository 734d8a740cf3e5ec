// SPDX-License-Identifier: Apache-2.0

// Package e2e runs the main job end to end on a local fleet: a hub
// cluster and three HGX H100 workload clusters (kube-apiserver,
// kube-scheduler, KWOK GPU nodes), the hub's store, registry, gRPC server,
// scheduler and dispatcher in-process, and one real agent per workload
// cluster registered with a join token. Tests submit jobs through the job
// intake and watch the member pods on both sides. Everything skips under
// -short.
package e2e
