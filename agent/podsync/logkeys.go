// SPDX-License-Identifier: Apache-2.0

package podsync

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// podKeys are the log keys of a member pod: the pod, and the job and
// epoch its labels name (the agent's logger already carries the cluster).
func podKeys(p metav1.Object) []any {
	l := p.GetLabels()
	return []any{"pod", klog.KObj(p), "job", l[v1alpha1.LabelJob], "epoch", l[v1alpha1.LabelEpoch]}
}
