// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The objects of this package are runtime.Objects (generated DeepCopyObject).
var _ = []runtime.Object{&Job{}, &Queue{}, &Cluster{}, &JoinToken{}, &Rollout{}}

// TestDeepCopyIsDeep checks the generated DeepCopy: the copy is equal, and
// changing its maps, slices and pointers leaves the original alone.
func TestDeepCopyIsDeep(t *testing.T) {
	now := metav1.Now()
	j := newJob("a").gpuLimit(8).with(func(j *Job) {
		j.Labels = map[string]string{"team": "nlp"}
		j.Status.Placement = &PlacementStatus{Clusters: []string{"eu1"}, Time: &now}
		j.Status.Members = []MemberStatus{{Index: 0, Cluster: "eu1", Phase: MemberRunning}}
		j.Status.Conditions = []metav1.Condition{{Type: JobConditionFinished, Status: metav1.ConditionFalse}}
	}).obj()
	c := j.DeepCopy()
	if !reflect.DeepEqual(j, c) {
		t.Fatalf("copy differs:\n%+v\n%+v", j, c)
	}
	c.Labels["team"] = "cv"
	c.Status.Placement.Clusters[0] = "us1"
	c.Status.Placement.Time.Time = now.Add(1)
	c.Status.Members[0].Phase = MemberFailed
	c.Status.Conditions[0].Status = metav1.ConditionTrue
	c.Spec.Template.Spec.Containers[0].Image = "other"
	q := c.Spec.Template.Spec.Containers[0].Resources.Limits[ResourceGPU]
	q.Add(q)
	c.Spec.Template.Spec.Containers[0].Resources.Limits[ResourceGPU] = q
	if !reflect.DeepEqual(j, newJob("a").gpuLimit(8).with(func(o *Job) {
		o.Labels = map[string]string{"team": "nlp"}
		o.Status.Placement = &PlacementStatus{Clusters: []string{"eu1"}, Time: &now}
		o.Status.Members = []MemberStatus{{Index: 0, Cluster: "eu1", Phase: MemberRunning}}
		o.Status.Conditions = []metav1.Condition{{Type: JobConditionFinished, Status: metav1.ConditionFalse}}
	}).obj()) {
		t.Errorf("changing the copy changed the original: %+v", j)
	}
	if o, ok := j.DeepCopyObject().(*Job); !ok || !reflect.DeepEqual(o, j) {
		t.Errorf("DeepCopyObject = %#v", o)
	}
}
