// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// A change of the local pod seen by the cache before CreatePod tracks the
// pod (the gang gate preparing it while Create returns) is still reported.
func TestChangeBeforeTrackIsReported(t *testing.T) {
	s, cs, n, _ := startSyncer(t)
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	prepared := corev1.PodCondition{Type: v1alpha1.PodConditionPrepared, Status: corev1.ConditionTrue}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		p.UID = "local-uid"
		if err := cs.Tracker().Create(gvr, p, p.Namespace); err != nil {
			return true, nil, err
		}
		created := p.DeepCopy()
		p.Status.Conditions = []corev1.PodCondition{prepared}
		if err := cs.Tracker().Update(gvr, p, p.Namespace); err != nil {
			return true, nil, err
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if lp, err := s.cache.Pods().Pods(p.Namespace).Get(p.Name); err == nil && len(lp.Status.Conditions) == 1 {
				return true, created, nil // the cache (and the dropped event) saw the change
			}
		}
		return true, nil, errors.New("the cache never saw the change")
	})
	hub := hubPod(nil)
	hub.Spec.NodeName = "v1"
	if err := s.CreatePod(t.Context(), "v1", hub); err != nil {
		t.Fatal(err)
	}
	n.wait(t, func(p *corev1.Pod) bool {
		return len(p.Status.Conditions) == 1 && p.Status.Conditions[0].Type == prepared.Type
	})
}
