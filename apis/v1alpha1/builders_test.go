// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jobBuilder builds test Jobs: newJob("a").members(4).gpus(8).obj().
type jobBuilder struct{ j Job }

func newJob(name string) *jobBuilder {
	return &jobBuilder{j: Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: KindJob},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: JobSpec{
			Queue: "research/nlp",
			Gang:  Gang{Members: 2, GPUsPerMember: 8},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "trainer", Image: "busybox"}},
			}},
		},
	}}
}

func (b *jobBuilder) members(n int32) *jobBuilder { b.j.Spec.Gang.Members = n; return b }
func (b *jobBuilder) gpus(n int32) *jobBuilder    { b.j.Spec.Gang.GPUsPerMember = n; return b }
func (b *jobBuilder) with(f func(*Job)) *jobBuilder {
	f(&b.j)
	return b
}
func (b *jobBuilder) gpuLimit(n int64) *jobBuilder {
	b.j.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
	return b
}
func (b *jobBuilder) obj() *Job { return &b.j }
