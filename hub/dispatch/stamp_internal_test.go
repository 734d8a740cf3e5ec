// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func TestToStampHeraldsDomainsThenStragglers(t *testing.T) {
	pod := func(index int, cluster string, phase corev1.PodPhase, ann ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "j-e1-" + strconv.Itoa(index),
			Labels:      map[string]string{v1alpha1.LabelMember: strconv.Itoa(index), v1alpha1.LabelCluster: cluster},
			Annotations: map[string]string{v1alpha1.AnnotationEpoch: "1"}}, Status: corev1.PodStatus{Phase: phase}}
		for i := 0; i+1 < len(ann); i += 2 {
			p.Annotations[ann[i]] = ann[i+1]
		}
		return p
	}
	pods := []*corev1.Pod{
		pod(3, "a", corev1.PodPending), pod(1, "a", corev1.PodPending), pod(10, "a", corev1.PodPending), // herald of a: 1
		pod(2, "b", corev1.PodPending, v1alpha1.AnnotationCommit, "1"), pod(4, "b", corev1.PodRunning), // b's herald stamped
		pod(5, "b", corev1.PodPending, v1alpha1.AnnotationComputeDomain, `{"nodes":["n"]}`),
	}
	names := func(ps []*corev1.Pod) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	committed := time.Unix(1000, 0)
	todo, later := toStamp(pods, "1", committed, committed.Add(time.Second))
	if got := names(todo); len(got) != 2 || got[0] != "j-e1-1" || got[1] != "j-e1-5" {
		t.Errorf("at the commit: %v, want the herald j-e1-1 and the compute-domain member j-e1-5", got)
	}
	if want := committed.Add(stragglersAfter); !later.Equal(want) {
		t.Errorf("stragglers due %v, want %v", later, want)
	}
	todo, later = toStamp(pods, "1", committed, committed.Add(stragglersAfter))
	if got := names(todo); len(got) != 4 || got[0] != "j-e1-3" || got[1] != "j-e1-1" || got[2] != "j-e1-10" || got[3] != "j-e1-5" {
		t.Errorf("after stragglersAfter: %v, want every member not running and not stamped", got)
	}
	if !later.IsZero() {
		t.Errorf("stragglers due %v after they were stamped", later)
	}
}
