// SPDX-License-Identifier: Apache-2.0

// Package scale is the hub load harness (docs/scale.md): a real shoal-hub
// with its hub kube-apiserver (started as `shoal dev` starts them, by
// internal/devfleet), and N simulated clusters, each the real agent code
// (agent.New(...).Run) whose workload cluster is in memory: client-go's
// fake clientset holding nodes of the `shoal dev` GPU profiles, with a
// simulated scheduler and kubelet (kubelet.go) that bind the members the
// agent ungates, run them and finish them after the duration their job
// asks for. Load submits jobs at a rate over gRPC/mTLS and measures what
// issue 17 sets targets for: the hub's scheduling cycle (its own
// histogram), submit → placed, the hub's resident memory, filtered and
// full job lists, and inventory change → visible on the hub.
//
// TestHarness runs a small configuration; TestBenchScale (make
// bench-scale) runs the configuration its environment gives and writes
// the JSON result.
package scale
