// SPDX-License-Identifier: Apache-2.0

// Package migrate versions the hub's stored records and brings old ones up
// to date.
//
// Every record the store writes carries its schema version in a first
// top-level JSON field, {"storageVersion":N,...}. A record without one was
// written before records had versions (every hub up to commit 2aa61dd) and
// is version 1, Legacy. Each kind has a Schema: its steps, each migrating a
// record's JSON from version N to N+1; the kind's version is the number of
// steps plus one. The store applies the steps when it reads a record
// (Schema.Upgrade) and stamps the kind's version when it writes one
// (Schema.Stamp), so a migrated record is rewritten in the new schema by
// its owner's next write of it, and a record nobody writes again is
// migrated on every read. Nothing rewrites records in bulk: a step is a
// pure function of the stored bytes and is kept for as long as a record of
// its version may exist.
//
// # Rolling upgrades
//
// During a rolling upgrade replicas of two releases share the store. The
// rule every step keeps (docs/upgrades.md): the new version is readable by
// the previous release. A step only adds fields (the previous release's
// encoding/json ignores them) and the new fields are derived from the old
// ones, which keep being written with their old meaning. A record the
// previous release rewrites loses the new fields and its version; the next
// read by a new replica derives them again, which is why every step is
// idempotent. A change that cannot be made that way takes two releases:
// the first learns to read the new form while writing the old, the second
// writes it. A replica reading a record newer than its own schema (a
// release ahead of it, within the one-release skew) decodes it as is.
package migrate
