// SPDX-License-Identifier: Apache-2.0

// Package sim is a seeded discrete-event simulator of a GPU fleet driven by
// federation/placement. It generates the benchmark fleets (F-S, F-M, F-L,
// F-XL) and a synthetic workload, runs Shoal's scheduler and the baselines
// (FIFO + first fit, summed capacity per cluster, one cluster per job,
// Shoal with topology off) over the same arrivals and node failures, checks
// the safety invariants independently of the scheduler, and reports the
// placement-quality figures of docs/benchmarks.md.
package sim
