package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Rollout moves a GitOps revision across the fleet in waves.
// +kubebuilder:object:root=true
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutSpec   `json:"spec"`
	Status RolloutStatus `json:"status,omitempty"`
}

// RolloutSpec is the revision, the clusters and how to pace them.
type RolloutSpec struct {
	// Revision (commit or tag) to roll out.
	Revision string `json:"revision"`
	// ClusterSelector picks the clusters; nil selects all.
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Waves, in order; the first is the canary. Empty: one canary cluster,
	// then the rest.
	Waves []RolloutWave `json:"waves,omitempty"`
	// Soak is how long each wave must stay healthy before the next starts.
	Soak metav1.Duration `json:"soak,omitempty"`
	// HealthTimeout is how long a wave may take to become healthy before the
	// rollout halts and rolls the wave back.
	HealthTimeout metav1.Duration `json:"healthTimeout,omitempty"`
}

// RolloutWave is one step of a rollout: explicit clusters or a share of the rest.
type RolloutWave struct {
	// Name of the wave.
	Name string `json:"name,omitempty"`
	// Clusters named explicitly.
	Clusters []string `json:"clusters,omitempty"`
	// Percent of the remaining selected clusters (1-100) when Clusters is empty.
	Percent int32 `json:"percent,omitempty"`
}

// RolloutPhase is where a rollout is.
type RolloutPhase string

// The rollout phases.
const (
	RolloutProgressing RolloutPhase = "Progressing"
	RolloutSoaking     RolloutPhase = "Soaking"
	RolloutSucceeded   RolloutPhase = "Succeeded"
	RolloutHalted      RolloutPhase = "Halted"
	RolloutRolledBack  RolloutPhase = "RolledBack"
)

// RolloutStatus is the rollout's progress.
type RolloutStatus struct {
	// Phase summarises the rollout.
	Phase RolloutPhase `json:"phase,omitempty"`
	// CurrentWave is the index of the wave in progress.
	CurrentWave int32 `json:"currentWave,omitempty"`
	// Waves is each planned wave's clusters and state.
	Waves []RolloutWaveStatus `json:"waves,omitempty"`
	// Conditions with reasons and messages.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutWaveStatus is a planned wave.
type RolloutWaveStatus struct {
	// Clusters in the wave.
	Clusters []string `json:"clusters"`
	// Phase of the wave.
	Phase RolloutPhase `json:"phase,omitempty"`
	// HealthySince is when every cluster of the wave became healthy.
	HealthySince *metav1.Time `json:"healthySince,omitempty"`
}
