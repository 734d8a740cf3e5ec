// SPDX-License-Identifier: Apache-2.0

// Package agent wires shoal-agent together: registration (or stored
// credentials), heartbeats, inventory reports, virtual nodes on the hub, the
// pods they run in the workload cluster with their jobs' rendezvous
// Services (agent/rendezvous), and the kubelet endpoint for logs and exec. Run blocks until its context ends or a part fails.
package agent
