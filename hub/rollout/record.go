// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fr "github.com/shoal-dev/shoal/federation/rollout"
)

// KindRollouts is the store kind of rollout records (v1alpha1.Rollout).
const KindRollouts = "rollouts"

// active reports whether the rollout still pins waves.
func active(r *v1alpha1.Rollout) bool { return r.Status.Phase == fr.PhaseProgressing }

// plan is the rollout as federation/rollout judges it: the commit, the
// waves planned at creation and the pace.
func plan(r *v1alpha1.Rollout) fr.Spec {
	waves := make([][]string, len(r.Status.Waves))
	for i, w := range r.Status.Waves {
		waves[i] = w.Clusters
	}
	return fr.Spec{Commit: r.Spec.Revision, Waves: waves, Soak: r.Spec.Soak.Duration, WaveTimeout: r.Spec.WaveTimeout.Duration}
}

// clusters is every cluster of the plan.
func clusters(r *v1alpha1.Rollout) []string {
	var out []string
	for _, w := range r.Status.Waves {
		out = append(out, w.Clusters...)
	}
	return out
}

// inCurrentWave reports whether cluster is in the wave r is at.
func inCurrentWave(r *v1alpha1.Rollout, cluster string) bool {
	st := r.Status
	return active(r) && st.Wave < len(st.Waves) && contains(st.Waves[st.Wave].Clusters, cluster)
}

// wantPins maps each cluster the rollout has reached to the commit its state
// says the cluster must run: waves passed (all, when it succeeded) and the
// current wave run the rollout's commit; a halted wave its previous commit.
func wantPins(r *v1alpha1.Rollout) map[string]string {
	want := map[string]string{}
	st := r.Status
	for i, wave := range st.Waves {
		if i > st.Wave && st.Phase != fr.PhaseSucceeded {
			break
		}
		for _, cl := range wave.Clusters {
			want[cl] = r.Spec.Revision
			if i == st.Wave && st.Phase == fr.PhaseHalted {
				want[cl] = st.Previous[cl]
			}
		}
	}
	return want
}

// setState stores the state federation/rollout returned, keeping the plan.
func setState(r *v1alpha1.Rollout, st fr.State) {
	waves := r.Status.Waves
	r.Status = st
	if st.Waves == nil {
		r.Status.Waves = waves
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
