// SPDX-License-Identifier: Apache-2.0

// Package placement decides where gangs run: snapshot in, decision out.
//
// A Snapshot holds the fleet's GPU inventory (built from inventory.Cluster
// reports) and the gangs already running on it, laid out for fast decisions:
// nodes sorted so that every topology domain (node, NVLink domain, rack,
// block, cluster) is a contiguous range with a running free-GPU count.
// Place puts one whole gang (every member or none) on exact per-node fits,
// honouring selectors, taints, MIG shapes and topology. Schedule runs one
// scheduling cycle over pending gangs: priority and hierarchical weighted
// fair share order, quotas, head-of-queue reservations with backfill and
// preemption across all clusters. Everything is deterministic: the same
// snapshot, input and options give the same decision; time comes in through
// the input, never from the wall clock.
package placement
