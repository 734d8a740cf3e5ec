// SPDX-License-Identifier: Apache-2.0

// Package testjob builds v1alpha1.Jobs for tests:
// testjob.New("a").Queue("q").Members(4).GPUs(8).Obj().
package testjob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// Wrapper wraps a Job under construction.
type Wrapper struct{ j v1alpha1.Job }

// New returns a valid Job: queue "default", 1 member × 1 GPU, one container
// "trainer" running busybox.
func New(name string) *Wrapper {
	return &Wrapper{j: v1alpha1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindJob},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.JobSpec{
			Queue: "default",
			Gang:  v1alpha1.Gang{Members: 1, GPUsPerMember: 1},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "trainer", Image: "busybox"}},
			}},
		},
	}}
}

// Obj returns the Job.
func (w *Wrapper) Obj() *v1alpha1.Job { return &w.j }

// Queue sets the queue.
func (w *Wrapper) Queue(q string) *Wrapper { w.j.Spec.Queue = q; return w }

// Members sets the gang size.
func (w *Wrapper) Members(n int32) *Wrapper { w.j.Spec.Gang.Members = n; return w }

// GPUs sets the GPUs per member.
func (w *Wrapper) GPUs(n int32) *Wrapper { w.j.Spec.Gang.GPUsPerMember = n; return w }

// Priority sets the priority class.
func (w *Wrapper) Priority(class v1alpha1.PriorityClass) *Wrapper {
	w.j.Spec.PriorityClass = class
	return w
}

// Required sets the required topology level.
func (w *Wrapper) Required(l v1alpha1.TopologyLevel) *Wrapper {
	w.j.Spec.Placement.Topology.Required = l
	return w
}

// MaxClusters sets the most clusters the gang may span.
func (w *Wrapper) MaxClusters(n int32) *Wrapper { w.j.Spec.Placement.MaxClusters = n; return w }

// Label sets a label on the Job.
func (w *Wrapper) Label(k, v string) *Wrapper {
	if w.j.Labels == nil {
		w.j.Labels = map[string]string{}
	}
	w.j.Labels[k] = v
	return w
}

// Container replaces the first container's name, image and command.
func (w *Wrapper) Container(name, image string, command ...string) *Wrapper {
	c := &w.j.Spec.Template.Spec.Containers[0]
	c.Name, c.Image, c.Command = name, image, command
	return w
}

// Command sets the first container's command.
func (w *Wrapper) Command(command ...string) *Wrapper {
	w.j.Spec.Template.Spec.Containers[0].Command = command
	return w
}

// Env appends an environment variable to the first container.
func (w *Wrapper) Env(name, value string) *Wrapper {
	c := &w.j.Spec.Template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

// Limit sets a resource limit of the first container.
func (w *Wrapper) Limit(res corev1.ResourceName, n int64) *Wrapper {
	c := &w.j.Spec.Template.Spec.Containers[0]
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[res] = *resource.NewQuantity(n, resource.DecimalSI)
	return w
}

// With applies f to the Job, for whatever has no method.
func (w *Wrapper) With(f func(*v1alpha1.Job)) *Wrapper { f(&w.j); return w }

// Role appends a role of members × gpus (0: CPU-only) whose one container
// runs image with command. The first call turns the job into the spec.roles
// form (spec.gang and spec.template are cleared).
func (w *Wrapper) Role(name string, members, gpus int32, image string, command ...string) *Wrapper {
	if len(w.j.Spec.Roles) == 0 {
		w.j.Spec.Gang, w.j.Spec.Template = v1alpha1.Gang{}, corev1.PodTemplateSpec{}
	}
	w.j.Spec.Roles = append(w.j.Spec.Roles, v1alpha1.Role{Name: name, Members: members, GPUsPerMember: gpus,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: name, Image: image, Command: command}},
		}}})
	return w
}
