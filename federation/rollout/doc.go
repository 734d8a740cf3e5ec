// SPDX-License-Identifier: Apache-2.0

// Package rollout holds the pure logic of a hub GitOps rollout: it splits a
// sorted cluster list into cumulative waves ("1,25%,100%") and, tick by tick,
// decides from each cluster's reported GitOps status, its Ready state and an
// injected clock whether the current wave passed, is still waiting, or failed
// (halt and roll that wave's clusters back to their previous revision). The
// hub's rollout controller stores the State and carries out the Actions.
package rollout
