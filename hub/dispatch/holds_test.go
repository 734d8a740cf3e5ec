// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// A member of healthy cluster eu-1 is not taken for one of Lost cluster eu,
// although its virtual node's name starts with eu's prefix.
func TestLostClusterMemberByLabelNotNodePrefix(t *testing.T) {
	l := lostClusters{"eu": v1alpha1.ClusterLost}
	pod := func(cluster string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelCluster: cluster}},
			Spec: corev1.PodSpec{NodeName: v1alpha1.VirtualNodeName(cluster, "h100-80gb")}}
	}
	onLost, rest := l.split([]*corev1.Pod{pod("eu"), pod("eu-1")}, v1alpha1.AtMostOnce)
	if len(onLost) != 1 || onLost[0].Labels[v1alpha1.LabelCluster] != "eu" || len(rest) != 1 {
		t.Fatalf("on lost %v, rest %v: want only eu's member on the lost side", onLost, rest)
	}
}
