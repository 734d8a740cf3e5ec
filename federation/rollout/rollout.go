package rollout

import (
	"time"

	"github.com/shoal-dev/shoal/federation/gitopstypes"
)

// Phase is where a rollout stands.
type Phase string

// Phases.
const (
	// PhaseProgressing means a wave is pinned and being watched.
	PhaseProgressing Phase = "Progressing"
	// PhaseSucceeded means every wave passed.
	PhaseSucceeded Phase = "Succeeded"
	// PhaseHalted means a wave failed; its clusters were rolled back and the
	// later waves never touched.
	PhaseHalted Phase = "Halted"
)

// Spec is what a user asks for.
type Spec struct {
	// Commit is the full SHA to roll out.
	Commit string `json:"commit"`
	// Waves are the planned waves (see Plan), canary first.
	Waves [][]string `json:"waves"`
	// Soak is how long every cluster of a wave must stay applied, healthy and
	// Ready before the next wave starts.
	Soak time.Duration `json:"soak"`
	// WaveTimeout fails a wave whose clusters have not all passed the gate
	// this long after it started (0: 10 minutes plus the soak time).
	WaveTimeout time.Duration `json:"waveTimeout,omitempty"`
}

// State is the rollout's stored progress; Tick advances it.
type State struct {
	Phase Phase `json:"phase"`
	// Wave is the index of the current (or failed, or last) wave.
	Wave int `json:"wave"`
	// WaveStarted is when the current wave was pinned.
	WaveStarted time.Time `json:"waveStarted"`
	// GoodSince holds, per cluster of the current wave, since when it has
	// continuously met the gate.
	GoodSince map[string]time.Time `json:"goodSince,omitempty"`
	// Previous is each touched cluster's commit before the rollout pinned it.
	Previous map[string]string `json:"previous,omitempty"`
	// Message explains the phase (which cluster failed and why).
	Message string `json:"message,omitempty"`
}

// Observation is what the hub knows about one cluster at a tick.
type Observation struct {
	// GitOps is the status the cluster's agent last reported.
	GitOps gitopstypes.Status
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
