// SPDX-License-Identifier: Apache-2.0

// Package store keeps the hub's objects in etcd. It is the only package of
// Shoal that imports go.etcd.io/etcd/client/v3; everything else reaches etcd
// through the typed API here.
//
// # Key layout
//
// Every object lives under one key:
//
//	<prefix><kind>/<name>
//
// The prefix defaults to "/shoal/" and ends with a slash. A kind is a plural
// lower-case word without a slash ("jobs", "queues", "clusters",
// "jointokens", "ledger"); a name may contain slashes (queue names are
// hierarchical, "org/team/project"). A kind's objects are the key range
// [<prefix><kind>/, <prefix><kind>0) ('0' is the byte after '/'), so List and
// Watch on a kind never see another kind. Values are encoded by the
// collection's Codec (JSON by default). Leader elections use
// <prefix>elections/<election>/<lease id>, written by etcd's concurrency
// package.
//
// # Versions
//
// Every value starts with its kind's storage version,
// {"storageVersion":N,...}: Collection stamps it on every write and, on
// every read, migrates an older value (one without a version is version 1)
// with the kind's steps before its codec decodes it. The schemas and steps
// live in package migrate; docs/upgrades.md has the rules a step keeps so
// that replicas of two releases can share the store.
//
// # Leaders
//
// Campaign wins an election and returns a Leadership whose Held guard keeps
// a deposed leader's writes out. RunElected is the loop every
// leader-elected part of the hub runs in: campaign, work while leading (the
// work's ctx ends when leadership is lost), resign, campaign again.
// CampaignAll and RunElectedAll do the same for several elections won in
// order on one session, fenced by the first one's guard: the hub's leader
// wins hub-leader and the per-part elections of older releases (hub/app).
//
// # Concurrency
//
// Each stored value carries etcd's mod revision. Update, Delete and the
// guards of a Txn compare it, so writers that read an old version get
// ErrConflict instead of overwriting a newer one; GuaranteedUpdate retries
// the read-modify-write. A Txn writes several keys (of one or several kinds)
// atomically when all its guards hold.
//
// # Revisions, lists and watches
//
// List returns a page of objects sorted by name at one store revision; the
// Continue token pins the following pages to the same revision, so a
// paginated list is a consistent snapshot. Watch(ctx, rev) delivers every
// change after revision rev (pass a List's Revision or the Revision of the
// last event seen) and resumes on its own when an etcd member fails. Once
// etcd has compacted the history the watch or the continued list fails with
// ErrCompacted and the caller lists again.
package store
