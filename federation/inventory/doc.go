// SPDX-License-Identifier: Apache-2.0

// Package inventory models a workload cluster's GPU capacity by shape: per
// node (product, memory, whole GPUs, MIG slices, NVLink clique, rack, block,
// zone, readiness, taints), per pool (one per GPU product and MIG profile,
// published as a virtual node) and per topology domain (NVLink clique, node,
// rack, block, cluster).
//
// It is pure: it reads Kubernetes API types but never talks to an API server.
// The agent builds a Cluster from its informers' Nodes and Pods and sends it to
// the hub as JSON; the hub's scheduler feeds it to federation/placement.
package inventory
