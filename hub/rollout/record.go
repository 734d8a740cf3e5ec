package rollout

import (
	"time"

	fr "github.com/shoal-dev/shoal/federation/rollout"
)

// KindRollouts is the store kind of rollout records.
const KindRollouts = "rollouts"

// Rollout is a stored rollout: what was asked, the plan and its progress.
type Rollout struct {
	// Name identifies the rollout.
	Name string `json:"name"`
	// Revision is the commit rolled out.
	Revision string `json:"revision"`
	// Selector picked the clusters (label-selector syntax; "" all with a source).
	Selector string `json:"selector,omitempty"`
	// Waves is the wave spec as given ("1,25%,100%").
	Waves string `json:"waves,omitempty"`
	// Spec is the planned rollout (commit, waves of cluster names, soak).
	Spec fr.Spec `json:"spec"`
	// State is the progress federation/rollout.Tick advances.
	State fr.State `json:"state"`
	// Paused stops the ticks until Resume.
	Paused bool `json:"paused,omitempty"`
	// Created is when the rollout was created.
	Created time.Time `json:"created"`
	// Updated is when the state last changed.
	Updated time.Time `json:"updated"`
}

// Active reports whether the rollout still pins waves.
func (r *Rollout) Active() bool { return r.State.Phase == fr.PhaseProgressing }

// Clusters is every cluster of the plan.
func (r *Rollout) Clusters() []string {
	var out []string
	for _, w := range r.Spec.Waves {
		out = append(out, w...)
	}
	return out
}

// wantPins maps each cluster the rollout has reached to the commit its state
// says the cluster must run: waves passed (all, when it succeeded) and the
// current wave run the rollout's commit; a halted wave its previous commit.
func (r *Rollout) wantPins() map[string]string {
	want := map[string]string{}
	for i, wave := range r.Spec.Waves {
		if i > r.State.Wave && r.State.Phase != fr.PhaseSucceeded {
			break
		}
		for _, cl := range wave {
			want[cl] = r.Spec.Commit
			if i == r.State.Wave && r.State.Phase == fr.PhaseHalted {
				want[cl] = r.State.Previous[cl]
			}
		}
	}
	return want
}
