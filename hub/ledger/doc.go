// SPDX-License-Identifier: Apache-2.0

// Package ledger is the hub's reservation ledger: which gang holds which
// GPUs, under which placement epoch. It is the only writer of the
// "reservations" and "ledgerclusters" kinds of the store.
//
// # Never the same GPU twice
//
// Every cluster has a booking counter record (kind "ledgerclusters"). A
// scheduler reads the counters and the reservations at one store revision
// (Read), decides, and books a gang with Book: one transaction that puts the
// reservation, bumps the counter of every cluster the gang touches, and is
// guarded by the revisions of those counters (plus the job's revision and
// the leader's key, which the caller adds). A second scheduler that decided
// on the same snapshot fails the guard with store.ErrConflict, re-reads and
// decides again, so two decisions can never book the same GPUs. Releasing a
// reservation frees GPUs, which can only make another decision more
// conservative, so Release needs no counter bump.
package ledger
