// SPDX-License-Identifier: Apache-2.0

// Package inference owns InferenceService records (docs/inference.md): the
// Service stores what users ask for and the load reported for each
// service; the leader-elected Controller turns each service into replica
// Jobs (through hub/jobs, so the scheduler places them under quota,
// priority and preemption like any job), scales them on load, rolls model
// versions out with surge, rolls back a rollout whose new replicas do not
// become ready, and publishes the endpoint list. Its decisions are the
// pure function Plan, on an injected clock.
package inference
