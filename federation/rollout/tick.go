// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Start begins a rollout: it pins the first wave. previous maps every
// cluster of the plan to the commit it runs now (its rollback target).
func Start(spec Spec, previous map[string]string, now time.Time) (State, Action) {
	st := State{Phase: PhaseSucceeded, Previous: map[string]string{}}
	for _, wave := range spec.Waves {
		st.Waves = append(st.Waves, v1alpha1.RolloutWave{Clusters: append([]string(nil), wave...)})
	}
	if len(spec.Waves) == 0 {
		st.Message = "no clusters selected"
		return st, Action{}
	}
	for _, wave := range spec.Waves {
		for _, c := range wave {
			st.Previous[c] = previous[c]
		}
	}
	return startWave(spec, st, 0, now)
}

func startWave(spec Spec, st State, i int, now time.Time) (State, Action) {
	st.Phase = PhaseProgressing
	st.Wave = i
	st.WaveStarted = metav1.NewMicroTime(now)
	st.GoodSince = map[string]metav1.MicroTime{}
	st.Message = fmt.Sprintf("wave %d/%d: waiting for %d cluster(s) to apply %s", i+1, len(spec.Waves), len(spec.Waves[i]), short(spec.Commit))
	return st, Action{Pin: append([]string(nil), spec.Waves[i]...)}
}

// Verdict is one cluster's standing against the wave gate.
type Verdict int

// Verdicts.
const (
	// Waiting means the cluster has not met the gate yet.
	Waiting Verdict = iota
	// Good means the cluster applied the commit, is healthy and Ready.
	Good
	// Failed means the cluster cannot pass: it rejected the commit, turned
	// Degraded on it, or fell out of the gate after meeting it.
	Failed
)

// Judge rates one cluster against the gate for commit. wasGood says whether it
// met the gate at the previous tick; losing the gate during the soak fails it.
// A revision the cluster rejected for good (Stalled: it does not build or the
// API server refuses it) fails at once; a transient error (fetch, apply) only
// waits, bounded by the wave timeout.
func Judge(commit string, o Observation, wasGood bool) (Verdict, string) {
	g := o.GitOps
	if g == nil {
		g = &v1alpha1.GitOpsStatus{Health: v1alpha1.GitOpsHealthUnknown}
	}
	applied := v1alpha1.SameCommit(g.AppliedCommit, commit)
	stalled := meta.IsStatusConditionTrue(g.Conditions, v1alpha1.GitOpsConditionStalled)
	switch {
	case v1alpha1.SameCommit(g.AttemptedCommit, commit) && g.Message != "" && stalled:
		return Failed, "revision rejected: " + g.Message
	case applied && g.Health == v1alpha1.GitOpsHealthDegraded:
		return Failed, "degraded: " + g.HealthMessage
	case applied && g.Health == v1alpha1.GitOpsHealthHealthy && o.Ready:
		return Good, ""
	case wasGood && !o.Ready:
		return Failed, "cluster turned NotReady during the soak"
	case wasGood:
		return Failed, fmt.Sprintf("left the gate during the soak (applied %s, health %s)", short(g.AppliedCommit), g.Health)
	}
	return Waiting, ""
}

// Tick evaluates the current wave at now. When the wave failed, the rollout
// halts and the wave's clusters are rolled back; when it passed (every
// cluster good for the soak time), the next wave is pinned.
func Tick(spec Spec, st State, obs map[string]Observation, now time.Time) (State, Action) {
	if st.Phase != PhaseProgressing {
		return st, Action{}
	}
	st.GoodSince = copyTimes(st.GoodSince)
	wave := spec.Waves[st.Wave]
	soaked := true
	for _, c := range wave {
		since, wasGood := st.GoodSince[c]
		v, why := Judge(spec.Commit, obs[c], wasGood)
		switch v {
		case Failed:
			return halt(spec, st, fmt.Sprintf("wave %d: cluster %s: %s", st.Wave+1, c, why))
		case Good:
			if !wasGood {
				since = metav1.NewMicroTime(now)
				st.GoodSince[c] = since
			}
			soaked = soaked && now.Sub(since.Time) >= spec.Soak
		default:
			delete(st.GoodSince, c)
			soaked = false
		}
	}
	if soaked {
		if st.Wave+1 == len(spec.Waves) {
			st.Phase = PhaseSucceeded
			st.Message = fmt.Sprintf("all %d wave(s) applied %s", len(spec.Waves), short(spec.Commit))
			return st, Action{}
		}
		return startWave(spec, st, st.Wave+1, now)
	}
	if now.Sub(st.WaveStarted.Time) >= spec.waveTimeout() {
		return halt(spec, st, fmt.Sprintf("wave %d did not pass within %s", st.Wave+1, spec.waveTimeout()))
	}
	return st, Action{}
}

// Abort halts a progressing rollout and rolls its current wave back.
func Abort(spec Spec, st State) (State, Action) {
	if st.Phase != PhaseProgressing {
		return st, Action{}
	}
	return halt(spec, st, "aborted")
}

func halt(spec Spec, st State, msg string) (State, Action) {
	st.Phase = PhaseHalted
	st.Message = msg + "; rolled back"
	rb := map[string]string{}
	for _, c := range spec.Waves[st.Wave] {
		rb[c] = st.Previous[c]
	}
	return st, Action{Rollback: rb}
}

func copyTimes(m map[string]metav1.MicroTime) map[string]metav1.MicroTime {
	out := make(map[string]metav1.MicroTime, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
