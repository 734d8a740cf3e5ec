// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Default values of the Job and Queue fields that have one.
const (
	DefaultMaxClusters        int32 = 1
	DefaultMaxRestarts        int32 = 3
	DefaultGracePeriodSeconds int64 = 30
	DefaultQueueWeight        int32 = 1
	DefaultMIGPerMember       int32 = 1
	DefaultSharedPerMember    int32 = 1
)

// SetJobDefaults fills the unset fields of a Job in place: apiVersion and
// kind, priority class, MIG slices per member, placement (maxClusters 1,
// BinPack), failure policy (3 restarts, Reschedule), preemption
// (preemptible below production, 30 s grace), rendezvous (port 29500,
// processes per member = the member's accelerator count, see
// JobSpec.ProcessesPerMember) and, when no container of the template (of
// each role) asks for its members' GPUs, a limit on the first container.
func SetJobDefaults(j *Job) {
	j.APIVersion, j.Kind = APIVersion, KindJob
	s := &j.Spec
	if s.PriorityClass == "" {
		s.PriorityClass = DefaultPriorityClass
	}
	if s.Gang.MIG != nil && s.Gang.MIG.PerMember == 0 {
		s.Gang.MIG.PerMember = DefaultMIGPerMember
	}
	if s.Gang.Shared != nil && s.Gang.Shared.PerMember == 0 {
		s.Gang.Shared.PerMember = DefaultSharedPerMember
	}
	for i := range s.Roles {
		if m := s.Roles[i].MIG; m != nil && m.PerMember == 0 {
			m.PerMember = DefaultMIGPerMember
		}
		if sh := s.Roles[i].Shared; sh != nil && sh.PerMember == 0 {
			sh.PerMember = DefaultSharedPerMember
		}
	}
	if s.Placement.MaxClusters == 0 {
		s.Placement.MaxClusters = DefaultMaxClusters
	}
	if s.Placement.Policy == "" {
		s.Placement.Policy = BinPack
	}
	if s.FailurePolicy.MaxRestarts == nil {
		s.FailurePolicy.MaxRestarts = ptr(DefaultMaxRestarts)
	}
	if s.RunPolicy == "" {
		s.RunPolicy = AtMostOnce
	}
	if s.FailurePolicy.OnClusterLoss == "" {
		s.FailurePolicy.OnClusterLoss = Reschedule
	}
	if s.Preemption.Preemptible == nil {
		s.Preemption.Preemptible = ptr(s.PriorityClass.PreemptibleByDefault())
	}
	if s.Preemption.GracePeriodSeconds == nil {
		s.Preemption.GracePeriodSeconds = ptr(DefaultGracePeriodSeconds)
	}
	if s.Rendezvous.Port == 0 {
		s.Rendezvous.Port = DefaultMasterPort
	}
	if s.Rendezvous.ProcessesPerMember == 0 {
		s.Rendezvous.ProcessesPerMember = s.ProcessesPerMember()
	}
	defaultGPULimit(s)
}

// defaultGPULimit puts each role's per-member accelerator request on the
// first container of its template when no container asks for that resource.
func defaultGPULimit(s *JobSpec) {
	if len(s.Roles) == 0 && s.Gang.Devices != nil {
		return // the member's ResourceClaim carries its GPUs (docs/dra.md)
	}
	for _, r := range s.MemberRoles() {
		defaultTemplateLimit(r.Template, r.Resource, r.PerMember)
	}
}

func defaultTemplateLimit(t *corev1.PodTemplateSpec, name corev1.ResourceName, n int32) {
	cs := t.Spec.Containers
	if n <= 0 || len(cs) == 0 || TemplateResource(t, name) > 0 {
		return
	}
	if cs[0].Resources.Limits == nil {
		cs[0].Resources.Limits = corev1.ResourceList{}
	}
	cs[0].Resources.Limits[name] = *resource.NewQuantity(int64(n), resource.DecimalSI)
}

// Resource returns the extended resource and count each member needs:
// nvidia.com/gpu × GPUsPerMember, the MIG profile's resource × PerMember,
// or nvidia.com/gpu.shared × the shares PerMember.
func (g Gang) Resource() (corev1.ResourceName, int32) {
	if g.MIG != nil {
		return g.MIG.ResourceName(), g.MIG.PerMember
	}
	if g.Shared != nil {
		return ResourceGPUShared, g.Shared.PerMember
	}
	return ResourceGPU, g.GPUsPerMember
}

// TemplateResource sums a resource's limits (or requests, where no limit
// is set) over the template's containers.
func TemplateResource(t *corev1.PodTemplateSpec, name corev1.ResourceName) int64 {
	var sum int64
	for _, c := range t.Spec.Containers {
		if q, ok := c.Resources.Limits[name]; ok {
			sum += q.Value()
		} else if q, ok := c.Resources.Requests[name]; ok {
			sum += q.Value()
		}
	}
	return sum
}

// SetQueueDefaults fills the unset fields of a Queue in place: apiVersion,
// kind and weight 1.
func SetQueueDefaults(q *Queue) {
	q.APIVersion, q.Kind = APIVersion, KindQueue
	if q.Spec.Weight == nil {
		q.Spec.Weight = ptr(DefaultQueueWeight)
	}
}

func ptr[T any](v T) *T { return &v }
