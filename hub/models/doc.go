// SPDX-License-Identifier: Apache-2.0

// Package models owns the ModelVersion records (docs/models.md): immutable
// versions of models with their artefact, digest, and where they came from
// — the training job and checkpoint, copied at registration so that the
// lineage outlives the job, and the parent version. It is their only
// writer; a version is registered once and never changes (registering the
// same spec again returns it; another spec under its name is refused).
// Lineage follows parents from a version back to its root.
package models
