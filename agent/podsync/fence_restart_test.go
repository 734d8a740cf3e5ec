// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRestartedAgentAdoptsBehindTheFence: right after a restart the fence
// refuses new members until the agent reaches the hub, but a member whose
// local pod the earlier run made is adopted at once (the upgrade test
// found its gang restarted when the restarted agent refused it).
func TestRestartedAgentAdoptsBehindTheFence(t *testing.T) {
	s, cs, _, rec := startSyncer(t)
	ctx := t.Context()
	running := hubPod(nil)
	if err := s.CreatePod(ctx, "v1", running); err != nil { // the earlier run
		t.Fatal(err)
	}
	s2 := restartedSyncer(t, cs, rec)
	fenced := errors.New("fenced: the agent has not reached the hub since it started")
	s2.SetCreateCheck(func() error { return fenced })
	if err := s2.CreatePod(ctx, "v1", running); err != nil {
		t.Fatalf("adopting the running member behind the fence: %v", err)
	}
	if _, err := s2.GetPod(ctx, running.Namespace, running.Name); err != nil {
		t.Errorf("adopted member not tracked: %v", err)
	}
	fresh := hubPod(nil)
	fresh.Name, fresh.UID = "q", "uid-q"
	if err := s2.CreatePod(ctx, "v1", fresh); !errors.Is(err, fenced) {
		t.Errorf("a new member behind the fence: %v, want the fence's refusal", err)
	}
	if _, err := cs.CoreV1().Pods(localNS).Get(ctx, "q", metav1.GetOptions{}); err == nil {
		t.Error("a new member was created behind the fence")
	}
}
