// SPDX-License-Identifier: Apache-2.0

// Package jobs is the hub's job intake: it accepts Jobs into their queues
// (defaulting, validation, idempotent submission), lists, watches and
// cancels them. It is the only writer of the "jobs" store kind.
//
// # Status
//
// Job status changes only through the typed Transitions of this package,
// each declaring the condition types it owns, written by Status (status.go)
// guarded by the revision the caller decided on. The scheduler asks to Book
// (in one transaction with its ledger reservation, via Status.Ops), Explain
// and MarkPreempted; the dispatcher asks to Decide, Aggregate, Requeue and
// Fail (requeue and fail in one transaction with the release); the user
// asks to Cancel. Everyone else reads jobs through a store.Reader.
//
// # Submission
//
// Submit defaults and validates the job and, in the same round, runs its
// pod template through the optional TemplateValidator (the hub backs it
// with a server-side dry-run on its management cluster): every problem of
// both, each with its field path (the template's under spec.template),
// comes back in one *v1alpha1.InvalidError (validate.go says when the
// template is not checked). It then checks that the queue exists and is not
// being deleted (errs.ErrFailedPrecondition otherwise) and stores the job as
// Pending in one transaction guarded by the queue's revision and the job
// name's absence. Submission is idempotent: the SHA-256 of the defaulted
// spec is kept in the annotation shoal.dev/spec-hash, and resubmitting the
// same name with the same spec returns the stored job; a different spec
// under a taken name is store.ErrAlreadyExists.
//
// # Lists
//
// List filters by queue, phase and cluster on the hub (etcd cannot) and
// still pages exactly: its continue token records the store page and how
// many of its items were consumed, at one pinned revision.
package jobs
