// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// memberTemplate is the pod template of a member: its role's, by the
// member's global index (roles take consecutive indices in spec order).
func memberTemplate(j *v1alpha1.Job, m ledger.Member) *corev1.PodTemplateSpec {
	if r, _, ok := j.Spec.RoleOf(m.Index); ok {
		return r.Template
	}
	return &j.Spec.Template
}

// setRole tells a member of a job with roles who it is: the label
// shoal.dev/role, and SHOAL_ROLE and SHOAL_ROLE_INDEX in every container.
// Members of a job without roles are left as they are.
func setRole(p *corev1.Pod, j *v1alpha1.Job, m ledger.Member) {
	r, ri, ok := j.Spec.RoleOf(m.Index)
	if !ok || r.Name == "" {
		return
	}
	p.Labels[v1alpha1.LabelRole] = r.Name
	env := []corev1.EnvVar{{Name: v1alpha1.EnvRole, Value: r.Name}, {Name: v1alpha1.EnvRoleIndex, Value: strconv.Itoa(int(ri))}}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, env...)
	}
}
