// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Rollout moves a GitOps commit across the fleet in waves. The hub stores
// and serves this object; its status is also the state the rollout
// controller advances (federation/rollout.State).
// +kubebuilder:object:root=true
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutSpec   `json:"spec"`
	Status RolloutStatus `json:"status,omitempty"`
}

// RolloutSpec is what was asked: the commit, the clusters and the pace.
type RolloutSpec struct {
	// Revision is the full commit SHA rolled out.
	Revision string `json:"revision"`
	// Selector picks the clusters (label-selector syntax); "" selects every
	// cluster with a GitOps source.
	Selector string `json:"selector,omitempty"`
	// Waves is the cumulative wave spec as given ("1,25%,100%"); the planned
	// waves are in the status.
	Waves string `json:"waves,omitempty"`
	// Soak is how long every cluster of a wave must stay applied, healthy and
	// Ready before the next wave starts.
	Soak metav1.Duration `json:"soak"`
	// WaveTimeout fails a wave whose clusters have not all passed this long
	// after it started (0: 10 minutes plus the soak).
	WaveTimeout metav1.Duration `json:"waveTimeout,omitempty"`
	// Paused stops the rollout from advancing until it is resumed.
	Paused bool `json:"paused,omitempty"`
}

// RolloutPhase is where a rollout stands.
type RolloutPhase string

// The rollout phases.
const (
	// RolloutProgressing: a wave is pinned and being watched.
	RolloutProgressing RolloutPhase = "Progressing"
	// RolloutSucceeded: every wave passed.
	RolloutSucceeded RolloutPhase = "Succeeded"
	// RolloutHalted: a wave failed or the rollout was aborted; that wave's
	// clusters were rolled back and the later waves never touched.
	RolloutHalted RolloutPhase = "Halted"
)

// RolloutStatus is the rollout's plan and progress.
type RolloutStatus struct {
	// Phase summarises the rollout.
	Phase RolloutPhase `json:"phase"`
	// Waves are the planned waves, canary first: the selected clusters
	// sorted by name and split by spec.waves when the rollout was created.
	Waves []RolloutWave `json:"waves,omitempty"`
	// Wave is the index of the current (or failed, or last) wave.
	Wave int `json:"wave"`
	// WaveStarted is when the current wave was pinned (microseconds: the
	// wave timeout counts from it).
	WaveStarted metav1.MicroTime `json:"waveStarted"`
	// GoodSince holds, per cluster of the current wave, since when it has
	// continuously met the gate (microseconds: the soak counts from it).
	GoodSince map[string]metav1.MicroTime `json:"goodSince,omitempty"`
	// Previous is each planned cluster's commit before the rollout pinned
	// it, its rollback target.
	Previous map[string]string `json:"previous,omitempty"`
	// Message explains the phase (which cluster failed and why).
	Message string `json:"message,omitempty"`
	// LastUpdateTime is when the status last changed.
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
}

// RolloutWave is one planned wave.
type RolloutWave struct {
	// Clusters in the wave.
	Clusters []string `json:"clusters"`
}
