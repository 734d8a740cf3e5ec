// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

const (
	newSHA = "1111111111111111111111111111111111111111"
	oldSHA = "0000000000000000000000000000000000000000"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// obs builds an Observation; the zero value of each option is "not there yet".
type obs struct {
	applied, attempted, err string
	health                  v1alpha1.GitOpsHealth
	notReady, stalled       bool
}

func (o obs) build() Observation {
	st := &v1alpha1.GitOpsStatus{AppliedCommit: o.applied, AttemptedCommit: o.attempted, Message: o.err, Health: o.health}
	stalled := metav1.ConditionFalse
	if o.stalled {
		stalled = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.GitOpsConditionStalled, Status: stalled})
	return Observation{GitOps: st, Ready: !o.notReady}
}

var (
	good     = obs{applied: newSHA, attempted: newSHA, health: v1alpha1.GitOpsHealthHealthy}
	stale    = obs{applied: oldSHA, attempted: oldSHA, health: v1alpha1.GitOpsHealthHealthy}
	broken   = obs{applied: oldSHA, attempted: newSHA, err: "kustomize build failed", health: v1alpha1.GitOpsHealthHealthy, stalled: true}
	flaky    = obs{applied: oldSHA, attempted: newSHA, err: "fetch: connection refused", health: v1alpha1.GitOpsHealthHealthy}
	degraded = obs{applied: newSHA, attempted: newSHA, health: v1alpha1.GitOpsHealthDegraded}
	rolling  = obs{applied: newSHA, attempted: newSHA, health: v1alpha1.GitOpsHealthProgressing}
)

// step is one tick of a scenario: the clock offset, what each cluster reports,
// and what the tick must decide.
type step struct {
	at       time.Duration
	obs      map[string]obs
	phase    Phase
	wave     int
	pin      []string
	rollback map[string]string
	msg      string
}

func TestTick(t *testing.T) {
	spec := Spec{Commit: newSHA, Waves: [][]string{{"a"}, {"b", "c"}}, Soak: 5 * time.Minute, WaveTimeout: 20 * time.Minute}
	tests := []struct {
		name  string
		steps []step
	}{
		{"passes wave by wave after the soak", []step{
			{at: 0, obs: map[string]obs{"a": stale}, phase: PhaseProgressing, wave: 0},
			{at: time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing, wave: 0},
			{at: 5 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing, wave: 0},
			{at: 6 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing, wave: 1, pin: []string{"b", "c"}},
			{at: 7 * time.Minute, obs: map[string]obs{"a": good, "b": good, "c": rolling}, phase: PhaseProgressing, wave: 1},
			{at: 8 * time.Minute, obs: map[string]obs{"a": good, "b": good, "c": good}, phase: PhaseProgressing, wave: 1},
			{at: 13 * time.Minute, obs: map[string]obs{"a": good, "b": good, "c": good}, phase: PhaseSucceeded, wave: 1},
		}},
		{"broken revision on the canary halts and rolls back", []step{
			{at: time.Minute, obs: map[string]obs{"a": broken}, phase: PhaseHalted, wave: 0,
				rollback: map[string]string{"a": oldSHA}, msg: "kustomize build failed"},
			{at: 10 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseHalted, wave: 0},
		}},
		{"a transient fetch error only waits", []step{
			{at: time.Minute, obs: map[string]obs{"a": flaky}, phase: PhaseProgressing},
			{at: 2 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing},
			{at: 7 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing, wave: 1, pin: []string{"b", "c"}},
		}},
		{"degraded on the revision fails the wave", []step{
			{at: time.Minute, obs: map[string]obs{"a": degraded}, phase: PhaseHalted, rollback: map[string]string{"a": oldSHA}, msg: "degraded"},
		}},
		{"NotReady during the soak fails", []step{
			{at: time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing},
			{at: 3 * time.Minute, obs: map[string]obs{"a": {applied: newSHA, attempted: newSHA, health: v1alpha1.GitOpsHealthHealthy, notReady: true}},
				phase: PhaseHalted, rollback: map[string]string{"a": oldSHA}, msg: "NotReady"},
		}},
		{"NotReady before applying only waits", []step{
			{at: time.Minute, obs: map[string]obs{"a": {applied: oldSHA, notReady: true}}, phase: PhaseProgressing},
			{at: 2 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing},
			{at: 7 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing, wave: 1, pin: []string{"b", "c"}},
		}},
		{"second wave failure rolls back only that wave", []step{
			{at: time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing},
			{at: 6 * time.Minute, obs: map[string]obs{"a": good}, phase: PhaseProgressing, wave: 1, pin: []string{"b", "c"}},
			{at: 7 * time.Minute, obs: map[string]obs{"a": good, "b": good, "c": broken}, phase: PhaseHalted, wave: 1,
				rollback: map[string]string{"b": "prev-b", "c": ""}, msg: "cluster c"},
		}},
		{"a wave that never applies times out", []step{
			{at: 19 * time.Minute, obs: map[string]obs{"a": stale}, phase: PhaseProgressing},
			{at: 20 * time.Minute, obs: map[string]obs{"a": stale}, phase: PhaseHalted, rollback: map[string]string{"a": oldSHA}, msg: "did not pass"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, act := Start(spec, map[string]string{"a": oldSHA, "b": "prev-b"}, t0)
			if st.Phase != PhaseProgressing || !reflect.DeepEqual(act.Pin, []string{"a"}) {
				t.Fatalf("Start = %+v, %+v; want wave 1 pinned to [a]", st, act)
			}
			if want := []v1alpha1.RolloutWave{{Clusters: []string{"a"}}, {Clusters: []string{"b", "c"}}}; !reflect.DeepEqual(st.Waves, want) {
				t.Fatalf("Start recorded the plan %+v, want %+v", st.Waves, want)
			}
			for i, s := range tt.steps {
				o := map[string]Observation{}
				for c, v := range s.obs {
					o[c] = v.build()
				}
				st, act = Tick(spec, st, o, t0.Add(s.at))
				if st.Phase != s.phase || st.Wave != s.wave {
					t.Fatalf("step %d: phase %s wave %d (%s), want %s wave %d", i, st.Phase, st.Wave, st.Message, s.phase, s.wave)
				}
				if !reflect.DeepEqual(act.Pin, s.pin) || !reflect.DeepEqual(act.Rollback, s.rollback) {
					t.Fatalf("step %d: action %+v, want pin %v rollback %v", i, act, s.pin, s.rollback)
				}
				if !strings.Contains(st.Message, s.msg) {
					t.Fatalf("step %d: message %q does not mention %q", i, st.Message, s.msg)
				}
			}
		})
	}
}

func TestStartWithoutClustersSucceeds(t *testing.T) {
	st, act := Start(Spec{Commit: newSHA}, nil, t0)
	if st.Phase != PhaseSucceeded || act.Pin != nil {
		t.Fatalf("Start with no waves = %+v %+v", st, act)
	}
}

func TestAbortRollsBackCurrentWave(t *testing.T) {
	spec := Spec{Commit: newSHA, Waves: [][]string{{"a"}, {"b"}}}
	st, _ := Start(spec, map[string]string{"a": oldSHA}, t0)
	st, act := Abort(spec, st)
	if st.Phase != PhaseHalted || !reflect.DeepEqual(act.Rollback, map[string]string{"a": oldSHA}) {
		t.Fatalf("Abort = %+v %+v", st, act)
	}
	if _, again := Abort(spec, st); again.Rollback != nil {
		t.Fatalf("second Abort acted: %+v", again)
	}
}
