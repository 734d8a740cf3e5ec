// SPDX-License-Identifier: Apache-2.0

// Package queues owns the hub's Queue records: the hierarchical queue tree
// (org, org/team, org/team/project) with GPU quotas per GPU class and
// fair-share weights. It is the only writer of the "queues" store kind.
//
// # Hierarchy
//
// Creating a queue creates its missing ancestors implicitly, in the same
// transaction, with default spec (weight 1, no quota) and the annotation
// v1alpha1.AnnotationImplicit (shoal.dev/implicit: "true"), so
// `shoal queue create research/nlp` works on an empty hub; give the parents
// quotas with Update when they matter.
//
// # Deletion
//
// Delete refuses (errs.ErrFailedPrecondition) while the queue has child
// queues or non-terminal jobs. It is safe against concurrent submissions: it
// first marks the queue (metadata.deletionTimestamp, which bumps the
// queue's revision), then counts the jobs, then deletes guarded by the
// marked revision. A submission commits only if the queue's revision is the
// one it validated against, so it either lands before the mark (and is
// counted) or sees the mark and is refused. A refused delete removes the
// mark again.
package queues
