// SPDX-License-Identifier: Apache-2.0

// Package devfleet starts and stops a local, multi-cluster GPU fleet on loopback:
// one hub management cluster (etcd + kube-apiserver) and N workload clusters
// (etcd + kube-apiserver + kube-scheduler + kwok) whose nodes are KWOK fake
// nodes labelled and sized the way NVIDIA GPU Feature Discovery and the device
// plugin label and size real GPU nodes.
//
// The processes are real binaries from the binary cache (`make k8s-bin`). They
// outlive the process that started them: Up records every pid, with its start
// time, in a state file under the fleet directory, and Down stops exactly those
// processes.
//
// It is product code, the runtime behind `shoal dev` (as kwok's
// pkg/kwokctl/runtime/binary is behind kwokctl); test/framework starts the
// integration and end-to-end test fleets through it. It never imports test/
// packages (depguard in .golangci.yml).
package devfleet
