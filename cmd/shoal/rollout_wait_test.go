// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// fakeRollouts answers GetRollout with the next of its states.
type fakeRollouts struct {
	shoalv1.RolloutsClient
	t      *testing.T
	states []*v1alpha1.Rollout
	gets   int
}

func (f *fakeRollouts) GetRollout(context.Context, *shoalv1.RolloutRequest, ...grpc.CallOption) (*shoalv1.Object, error) {
	r := f.states[min(f.gets, len(f.states)-1)]
	f.gets++
	b, err := json.Marshal(r)
	if err != nil {
		f.t.Fatal(err)
	}
	return &shoalv1.Object{Json: b}, nil
}

func rolloutAt(phase v1alpha1.RolloutPhase, wave int, good map[string]time.Duration) *v1alpha1.Rollout {
	r := &v1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Spec: v1alpha1.RolloutSpec{Soak: metav1.Duration{Duration: time.Minute}},
		Status: v1alpha1.RolloutStatus{Phase: phase, Wave: wave, Message: "eu2 Degraded",
			Waves: []v1alpha1.RolloutWave{{Clusters: []string{"eu1"}}, {Clusters: []string{"eu2", "eu3", "eu4"}}}}}
	r.Status.GoodSince = map[string]metav1.MicroTime{}
	for c, ago := range good {
		r.Status.GoodSince[c] = metav1.MicroTime{Time: time.Now().Add(-ago)}
	}
	return r
}

func TestRolloutWaitCountsSoakedClusters(t *testing.T) {
	cl := &fakeRollouts{t: t, states: []*v1alpha1.Rollout{
		rolloutAt(v1alpha1.RolloutProgressing, 0, map[string]time.Duration{"eu1": time.Second}),
		rolloutAt(v1alpha1.RolloutProgressing, 1, map[string]time.Duration{"eu2": 2 * time.Minute, "eu3": time.Second}),
		rolloutAt(v1alpha1.RolloutSucceeded, 1, nil),
	}}
	var b bytes.Buffer
	if err := waitForRollout(t.Context(), &b, cl, "r1", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := "rollout/r1: 0/4 wave 1/2: 1/1 clusters healthy, 0 soaked 1m0s\n" +
		"rollout/r1: 2/4 wave 2/2: 2/3 clusters healthy, 1 soaked 1m0s\n" +
		"rollout/r1: 4/4 Succeeded\n"
	if b.String() != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestRolloutWaitFailsWhenHalted(t *testing.T) {
	cl := &fakeRollouts{t: t, states: []*v1alpha1.Rollout{rolloutAt(v1alpha1.RolloutHalted, 1, nil)}}
	var b bytes.Buffer
	err := waitForRollout(t.Context(), &b, cl, "r1", time.Millisecond)
	if !errors.Is(err, errRolloutHalted) || !strings.Contains(err.Error(), "eu2 Degraded") {
		t.Fatalf("err = %v, want the halt with its message", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	cl = &fakeRollouts{t: t, states: []*v1alpha1.Rollout{rolloutAt(v1alpha1.RolloutProgressing, 0, nil)}}
	if err := waitForRollout(ctx, &b, cl, "r1", time.Millisecond); err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("err = %v, want a timeout", err)
	}
}
