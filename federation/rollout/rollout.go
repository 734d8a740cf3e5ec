// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Phase is where a rollout stands.
type Phase = v1alpha1.RolloutPhase

// Phases.
const (
	// PhaseProgressing means a wave is pinned and being watched.
	PhaseProgressing = v1alpha1.RolloutProgressing
	// PhaseSucceeded means every wave passed.
	PhaseSucceeded = v1alpha1.RolloutSucceeded
	// PhaseHalted means a wave failed; its clusters were rolled back and the
	// later waves never touched.
	PhaseHalted = v1alpha1.RolloutHalted
)

// Spec is the planned rollout the functions of this package judge against.
type Spec struct {
	// Commit is the full SHA to roll out.
	Commit string
	// Waves are the planned waves (see Plan), canary first.
	Waves [][]string
	// Soak is how long every cluster of a wave must stay applied, healthy and
	// Ready before the next wave starts.
	Soak time.Duration
	// WaveTimeout fails a wave whose clusters have not all passed the gate
	// this long after it started (0: 10 minutes plus the soak time).
	WaveTimeout time.Duration
}

// State is the rollout's progress, stored as the status of the apis
// Rollout; Start and Tick advance it. The functions of this package read
// and write its Phase, Waves (the plan Start records), Wave, WaveStarted,
// GoodSince, Previous and Message.
type State = v1alpha1.RolloutStatus

// Observation is what the hub knows about one cluster at a tick.
type Observation struct {
	// GitOps is the status the cluster's agent last reported (nil: none).
	GitOps *v1alpha1.GitOpsStatus
	// Ready is the cluster's own state (agent connected, lease fresh).
	Ready bool
}

// Action is what the hub must do after a tick.
type Action struct {
	// Pin lists clusters to pin to the rollout commit now.
	Pin []string
	// Rollback maps clusters to the commit they must return to now.
	Rollback map[string]string
}

func (s Spec) waveTimeout() time.Duration {
	if s.WaveTimeout > 0 {
		return s.WaveTimeout
	}
	return 10*time.Minute + s.Soak
}
